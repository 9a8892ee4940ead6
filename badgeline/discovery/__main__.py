"""`python -m badgeline.discovery`: look at badgeline's mDNS from a shell.

For a venue tech ("does this laptop see the agents?") and for the tests,
which run advertisers in separate processes. Advertisers print `ready` once
announced, accept `move ADDRESS PORT` lines on stdin, and say goodbye on
SIGTERM, SIGINT or end of input.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import signal
import sys
import time

from badgeline.discovery.advertise import (
    AgentAdvertiser,
    CoordinatorAdvertiser,
    ServiceAdvertiser,
)
from badgeline.discovery.agents import AgentBrowser
from badgeline.discovery.coordinator import find_coordinator
from badgeline.discovery.errors import DiscoveryError
from badgeline.discovery.names import DiscoveryTiming


def _ipv4(value: str) -> str:
    """An argparse type: an interface name (`wlan0`) gave zeroconf's traceback."""
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an IPv4 address: give the interface's address (`ip -4 addr`)"
        ) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m badgeline.discovery")
    parser.add_argument(
        "--interface", action="append", dest="interfaces", metavar="IP", type=_ipv4,
        help="IPv4 address of an interface to use (repeatable; default: all)",
    )  # fmt: skip
    parser.add_argument("--fast", action="store_true", help="test timing (sub-second)")
    sub = parser.add_subparsers(dest="command", required=True)
    agent = sub.add_parser("advertise-agent", help="advertise a (pretend) agent")
    agent.add_argument("--printer-id", required=True)
    agent.add_argument("--status-port", type=int, default=8421)
    agent.add_argument("--model", default="unknown")
    agent.add_argument("--address", action="append", dest="addresses", metavar="IP")
    coordinator = sub.add_parser("advertise-coordinator", help="advertise a coordinator")
    coordinator.add_argument("--venue", required=True)
    coordinator.add_argument("--port", type=int, default=8420)
    coordinator.add_argument("--address", action="append", dest="addresses", metavar="IP")
    browse = sub.add_parser("browse", help="list the agents heard within --seconds")
    browse.add_argument("--seconds", type=float, default=5.0)
    find = sub.add_parser("find-coordinator", help="print the coordinator's API URL")
    find.add_argument("--timeout", type=float, default=10.0)
    find.add_argument("--venue")
    return parser


def _timing(fast: bool) -> DiscoveryTiming:
    if not fast:
        return DiscoveryTiming()
    return DiscoveryTiming(
        browse_interval_ms=500,
        resolve_timeout_ms=1_000,
        liveness_probe_interval_s=0.5,
        stale_after_s=2.0,
    )


async def _serve(advertiser: ServiceAdvertiser) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await advertiser.start()
    print("ready", advertiser.name, flush=True)
    reader = asyncio.ensure_future(_follow_stdin(advertiser, stop))
    await stop.wait()
    reader.cancel()
    await advertiser.stop()
    print("goodbye", flush=True)


async def _follow_stdin(advertiser: ServiceAdvertiser, stop: asyncio.Event) -> None:
    # A stream rather than a thread: a thread blocked in readline() would keep
    # the process alive after the goodbye, until someone closes our stdin.
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # stdin is a regular file: nothing to follow
        return
    while True:
        line = (await reader.readline()).decode()
        if not line:
            stop.set()
            return
        words = line.split()
        if len(words) == 3 and words[0] == "move":
            await advertiser.update(addresses=[words[1]], port=int(words[2]))
            print("moved", words[1], words[2], flush=True)


async def _browse(args: argparse.Namespace) -> int:
    async with AgentBrowser(interfaces=args.interfaces, timing=_timing(args.fast)) as browser:
        await asyncio.sleep(args.seconds)
        now = time.time()
        for agent in browser.agents():
            print(
                f"{agent.printer_id}\t{agent.address}:{agent.port}\t{agent.model}\t"
                f"v{agent.version}\tlast seen {now - agent.last_seen:.1f}s ago"
            )
        return 0 if browser.agents() else 1


async def _main(args: argparse.Namespace) -> int:
    if args.command == "advertise-agent":
        await _serve(AgentAdvertiser(
            args.printer_id, status_port=args.status_port, model=args.model,
            interfaces=args.interfaces, addresses=args.addresses,
        ))  # fmt: skip
        return 0
    if args.command == "advertise-coordinator":
        await _serve(CoordinatorAdvertiser(
            args.venue, port=args.port, interfaces=args.interfaces, addresses=args.addresses,
        ))  # fmt: skip
        return 0
    if args.command == "browse":
        return await _browse(args)
    location = await find_coordinator(
        args.timeout, venue=args.venue, interfaces=args.interfaces, timing=_timing(args.fast)
    )
    print(location.base_url, location.venue, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_main(args))
    except DiscoveryError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
