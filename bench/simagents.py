"""Simulated print agents: light asyncio clients speaking the real agent HTTP protocol.

    python bench/simagents.py --url URL --first 0 --count 250 --seconds 12
        [--heartbeat-s 1.0] [--no-heartbeat] [--no-lease] [--print-ms 20]

Run by bench_scale.py as processes of their own (so they share no GIL with the
coordinator or the kiosk load). Each simulated agent owns printer
`printer-bench<NN>` (benchkit's ids and tokens) and, until `--seconds` have
passed:

- heartbeats every `--heartbeat-s` (first one at a random moment of the interval,
  so a fleet does not beat in step), reporting a healthy printer;
- long-polls `POST /lease?wait=…&max=1`; for each job: `start`, "prints" for
  `--print-ms`, then `ack` as printed.

No journal, no rendering, no printer: only the coordinator's side of the
protocol is exercised. At the end it prints one JSON line: counts by request and
status, and each heartbeat's (Unix send time, round-trip ms).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
from benchkit import agent_token, printer_ids

LEASE_WAIT_S = 10


class SimAgent:
    def __init__(
        self, session: aiohttp.ClientSession, url: str, printer_id: str,
        args: argparse.Namespace, counts: Counter[str], beats: list[tuple[float, float]],
    ) -> None:  # fmt: skip
        self.session, self.args, self.counts, self.beats = session, args, counts, beats
        self.base = f"{url}/v1/agents/{printer_id}"
        self.headers = {"Authorization": f"Bearer {agent_token(printer_id)}"}
        self.beat = json.dumps({"agent_id": f"sim-{printer_id}", "version": "bench",
                                "health": {"reachable": True}}).encode()  # fmt: skip

    async def _post(self, path: str, body: bytes | None = None) -> tuple[int, object]:
        headers = {**self.headers, "Content-Type": "application/json"} if body else self.headers
        async with self.session.post(self.base + path, data=body, headers=headers) as response:
            try:
                return response.status, await response.json(content_type=None)
            except ValueError:  # not JSON (a proxy's error page): counted by its status
                return response.status, None

    async def heartbeats(self, until: float) -> None:
        interval = self.args.heartbeat_s
        next_at = time.monotonic() + random.uniform(0, interval)
        while next_at < until:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            sent, started = time.time(), time.perf_counter()
            try:
                status, _ = await self._post("/heartbeat", self.beat)
            except (aiohttp.ClientError, TimeoutError):
                status = 0
            self.beats.append((sent, (time.perf_counter() - started) * 1000))
            self.counts[f"heartbeat {status}"] += 1
            next_at += interval

    async def work(self, until: float) -> None:
        while time.monotonic() < until:
            wait = max(0, min(LEASE_WAIT_S, int(until - time.monotonic())))
            try:
                status, answer = await self._post(f"/lease?wait={wait}&max=1")
            except (aiohttp.ClientError, TimeoutError):
                self.counts["lease error"] += 1
                await asyncio.sleep(0.5)
                continue
            if status != 200 or not isinstance(answer, dict):
                self.counts[f"lease {status}"] += 1
                await asyncio.sleep(0.5)
                continue
            for leased in answer["jobs"]:
                await self.print_one(leased)

    async def print_one(self, leased: dict[str, object]) -> None:
        job_path, lease = f"/jobs/{leased['job_id']}", leased["lease_id"]
        try:
            start = json.dumps({"lease_id": lease}).encode()
            status, granted = await self._post(job_path + "/start", start)
            self.counts[f"start {status}"] += 1
            if status != 200 or not isinstance(granted, dict):
                return
            await asyncio.sleep(self.args.print_ms / 1000)
            ack = {"lease_id": lease, "result": "printed", "fence": granted.get("fence")}
            status, _ = await self._post(job_path + "/ack", json.dumps(ack).encode())
            self.counts[f"ack {status}"] += 1
        except (aiohttp.ClientError, TimeoutError):
            self.counts["job error"] += 1


async def run(args: argparse.Namespace) -> None:
    ids = printer_ids(args.first + args.count)[args.first :]
    counts: Counter[str] = Counter()
    beats: list[tuple[float, float]] = []
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=LEASE_WAIT_S + 30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        agents = [SimAgent(session, args.url, p, args, counts, beats) for p in ids]
        # The parent starts its clock when every fleet process is up: a loaded
        # machine can take seconds to start Python.
        print("ready", flush=True)
        until = time.monotonic() + args.seconds
        tasks = []
        for agent in agents:
            if not args.no_heartbeat:
                tasks.append(agent.heartbeats(until))
            if not args.no_lease:
                tasks.append(agent.work(until))
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks)
    print(json.dumps({"counts": counts, "heartbeats": beats}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--heartbeat-s", type=float, default=1.0)
    parser.add_argument("--no-heartbeat", action="store_true")
    parser.add_argument("--no-lease", action="store_true")
    parser.add_argument("--print-ms", type=float, default=20)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
