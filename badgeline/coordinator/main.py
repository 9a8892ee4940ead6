"""`badgeline coordinator`: start Redis if needed, then serve the API."""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import logging
import signal
import socket
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from badgeline import systemd_notify
from badgeline.coordinator.api import tls
from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import ConfigError, CoordinatorSettings, load_coordinator_settings
from badgeline.coordinator.store.connection import RedisClient, RedisUnreachableAtStart, connected
from badgeline.coordinator.store.embedded import EmbeddedRedis, RedisServerError
from badgeline.discovery import DiscoveryError
from badgeline.discovery.advertise import CoordinatorAdvertiser
from badgeline.log import configure_logging, log_event
from badgeline.private_files import private_dir

# The unit's RestartPreventExitStatus= names it: a bad config is not restarted in a loop.
EXIT_CONFIG_ERROR = 2
NO_TOKENS_HINT = ("every API call will get 401: add [[tokens]] entries to the config "
                  "(`badgeline hash-token --name NAME --role kiosk|agent|operator`)")  # fmt: skip


class ListenError(Exception):
    """The API cannot be served on the configured address (exit 1: systemd retries)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML settings file (see docs/config.md)")
    parser.add_argument("--host", help="listen address (overrides listen_host)")
    parser.add_argument("--port", type=int, help="listen port (overrides listen_port)")
    parser.add_argument("--state-dir", type=Path, help="where the embedded Redis keeps its AOF")
    parser.add_argument("--redis-url", help="use this Redis instead of the embedded one")
    parser.add_argument(
        "--check", action="store_true",
        help="check the settings, TLS certificate and key and listen address, say what would "
             "be served, and exit (0: it would start, 2: what to fix)",
    )  # fmt: skip


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    pairs = {"listen_host": args.host, "listen_port": args.port, "state_dir": args.state_dir,
             "redis_url": args.redis_url}  # fmt: skip
    return {key: value for key, value in pairs.items() if value is not None}


def make_runner(settings: CoordinatorSettings, redis: RedisClient) -> web.AppRunner:
    # The keep-alive timer runs from connection open (and from each response) until
    # a full request head has arrived: it also cuts off a client trickling headers.
    return web.AppRunner(create_app(settings, redis), handle_signals=False,
                         keepalive_timeout=settings.client_idle_timeout_s)  # fmt: skip


def make_site(
    runner: web.AppRunner, settings: CoordinatorSettings, ssl_context: ssl.SSLContext | None
) -> web.TCPSite:
    return web.TCPSite(runner, settings.listen_host, settings.listen_port, ssl_context=ssl_context)


async def serve(settings: CoordinatorSettings) -> None:
    ssl_context = tls.server_context(settings)  # a bad certificate stops us before Redis starts
    if not settings.tokens:
        # Not an error (enrolled agents bring their own tokens), but with no
        # operator token nobody can issue them, and every kiosk call is a 401.
        log_event("no_api_tokens", logging.WARNING, hint=NO_TOKENS_HINT)
    embedded: EmbeddedRedis | None = None
    redis_url = settings.redis_url
    if redis_url is None:
        embedded = EmbeddedRedis(
            settings.state_dir / "redis", appendfsync=settings.embedded_appendfsync
        )
        try:
            # The state directory and Redis's are the coordinator's alone (0700).
            private_dir(settings.state_dir)
            private_dir(embedded.data_dir)
        except OSError as error:
            raise ConfigError(
                f"state_dir: cannot create {embedded.data_dir}: {error.strerror}"
            ) from None
        _make_audit_dir(settings)
        await asyncio.to_thread(embedded.start)
        redis_url = embedded.url
        log_event("embedded_redis_started", port=embedded.port, dir=str(embedded.data_dir))
    else:
        _make_audit_dir(settings)
    try:
        async with connected(settings, redis_url) as redis:
            runner = make_runner(settings, redis)
            try:
                await runner.setup()
                try:
                    await make_site(runner, settings, ssl_context).start()
                except OSError as error:  # port taken, or an address this host does not have
                    raise ListenError(
                        f"cannot listen on {settings.listen_host}:{settings.listen_port}: "
                        f"{error.strerror} (listen_host / listen_port, --host / --port)"
                    ) from None
                settle_garbage_collector()
                async with _announced(settings):
                    log_event("coordinator_ready", url=f"{tls.scheme(settings)}://"
                              f"{settings.listen_host}:{settings.listen_port}",
                              venue=settings.venue)  # fmt: skip
                    await _wait_for_stop_signal()
                    log_event("coordinator_stopping")
            finally:
                await runner.cleanup()
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)


def _make_audit_dir(settings: CoordinatorSettings) -> None:
    # Jobs leave Redis only once written there (control/retention.py): a directory
    # that cannot be made stops the start, not the first sweep a week later.
    try:
        private_dir(settings.audit_directory)
    except OSError as error:
        raise ConfigError(
            f"audit_dir: cannot create {settings.audit_directory}: {error.strerror}"
        ) from None


# A young collection runs once this many more container objects were made than
# freed. Python's 700 ran one every ~20 accepted jobs (bench_accept: ~150 per
# 3,000 jobs, 150-340 ms of pauses under load); a request's objects are freed by
# reference counting when it ends, so at 20,000 the collector runs only when
# something really accumulates: 0-2 passes of ~15 ms per 2,500-job round.
YOUNG_GC_THRESHOLD = 20_000


def settle_garbage_collector() -> None:
    """Leave everything built at start-up (modules, models, routes, scripts:
    ~75,000 objects) out of the collector's full passes, and collect the young
    generation less often. Each full pass otherwise walked all of them, a ~60 ms
    stall of every request in flight, the largest part of the accept latency's
    tail (docs/benchmarks.md); the stall metrics (control/stalls.py) show what is left."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)


@contextlib.asynccontextmanager
async def _announced(settings: CoordinatorSettings) -> AsyncIterator[None]:
    """Tell systemd we are up (and keep its watchdog fed from the event loop
    itself, so a wedged loop gets restarted) and advertise the API by mDNS."""
    advertiser = None
    if settings.mdns:
        advertiser = CoordinatorAdvertiser(
            settings.venue, port=settings.listen_port, scheme=tls.scheme(settings),
            interfaces=settings.mdns_interface_list(),
        )  # fmt: skip
        try:
            # A name taken by another coordinator is handled inside (we take the
            # next one); whatever else goes wrong with mDNS, the API keeps serving.
            await advertiser.start()
        except (DiscoveryError, OSError) as error:
            log_event("mdns_failed", logging.ERROR, venue=settings.venue, error=str(error))
            advertiser = None
    systemd_notify.notify_ready(status=f"serving venue {settings.venue}")
    watchdog = asyncio.create_task(systemd_notify.watchdog_loop(), name="systemd-watchdog")
    try:
        yield
    finally:
        systemd_notify.notify_stopping()
        watchdog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watchdog
        if advertiser is not None:
            await advertiser.stop()


async def _wait_for_stop_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_coordinator_settings(args.config, **_overrides(args))
    except ConfigError as error:
        print(error, file=sys.stderr)
        return EXIT_CONFIG_ERROR
    if args.check:
        return check(settings, args.config)
    configure_logging(settings.log_level)
    try:
        asyncio.run(serve(settings))
    except ConfigError as error:
        print(error, file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except RedisServerError as error:
        print(f"cannot start the embedded Redis server: {error}", file=sys.stderr)
        return 1
    except (ListenError, RedisUnreachableAtStart) as error:
        print(error, file=sys.stderr)
        return 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    return 0


def check(settings: CoordinatorSettings, config: Path | None) -> int:
    """`--check`: what start-up would refuse, found before a service is started on it."""
    try:
        tls.server_context(settings)
        _check_listen_address(settings.listen_host)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return EXIT_CONFIG_ERROR
    roles = collections.Counter(entry.role for entry in settings.tokens)
    redis = (f"embedded, in {settings.state_dir / 'redis'}" if settings.redis_url is None
             else f"{settings.redis_mode}, {settings.redis_url.rpartition('@')[2]}")  # fmt: skip
    mdns = ", ".join(settings.mdns_interface_list() or ["every interface"])
    print(f"{config or 'the settings'}: ok")
    print(f"  serves   {tls.scheme(settings)}://{settings.listen_host}:{settings.listen_port}"
          f" (venue {settings.venue})")  # fmt: skip
    print(f"  tokens   {roles['operator']} operator, {roles['kiosk']} kiosk, {roles['agent']} "
          "agent (enrolled agents bring their own)")  # fmt: skip
    print(f"  redis    {redis}")
    print(f"  mdns     {f'advertised on {mdns}' if settings.mdns else 'off'}")
    if not roles["operator"]:
        print("  warning  no operator token: nobody can issue enrolment codes or use the "
              "CLI and dashboard (`badgeline hash-token --role operator`)")  # fmt: skip
    return 0


def _check_listen_address(host: str) -> None:
    """An address this machine does not have (a typo, the wrong interface) fails the
    real start only once the embedded Redis is up: bind it to a spare port now."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]  # fmt: skip
        with socket.socket(family, kind, proto) as probe:
            probe.bind(address)
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConfigError(f"listen_host: cannot listen on {host} here ({reason}): use an "
                          "address of this machine, or 0.0.0.0 for all") from None  # fmt: skip
