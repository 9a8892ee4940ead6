"""A venue for chaos runs: real processes, with every fault a hall can have within reach.

One Redis server (the embedded valkey, AOF) that the harness itself can kill -9
and restart; coordinator replicas on fixed ports sharing it; printer emulators
(never faulted by killing: they are the ground truth); and one agent per
printer, each talking to its replica through a `FaultProxy` so its link can be
cut. Agents are spread over the replicas round-robin.

It composes `ManagedProcess` and the HTTP helpers of `badgeline.localvenue`
rather than extending `LocalVenue`: a chaos run needs the Redis server, the
replicas and the links in its own hands, on ports that survive restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from badgeline.coordinator.store.embedded import EmbeddedRedis, free_port
from badgeline.localvenue import ManagedProcess, PrinterSlot
from tests.chaos.harness.configs import (
    AGENT_DEFAULTS,
    COORDINATOR_DEFAULTS,
    agent_config,
    to_toml,
    tokens,
)
from tests.chaos.harness.proxy import FaultProxy

START_TIMEOUT_S = 60.0
# As the shipped units do (badgeline/provision/files/*.service: Restart=always,
# RestartSec=2): a coordinator, agent or emulator that exits on its own is started
# again 2 s later.
RESTART_AFTER_S = 2.0


class VenueError(RuntimeError):
    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        # Every replica answered 404: the thing is not there. Anything else (a 503
        # while Redis restarts, a refused connection) says nothing about it.
        self.not_found = not_found


@dataclass
class Replica:
    index: int  # 1-based: coordinator-1, coordinator-2, ...
    port: int

    @property
    def name(self) -> str:
        return f"coordinator-{self.index}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class ChaosVenue:
    def __init__(
        self,
        root: Path,
        printer_ids: tuple[str, ...],
        *,
        coordinators: int = 2,
        coordinator_settings: dict[str, Any] | None = None,
        agent_settings: dict[str, Any] | None = None,
        appendfsync: str = "always",
        supervise: bool = False,
    ) -> None:
        self.root = root.resolve()
        # Restart processes that exit on their own (see _supervise). Off for the
        # harnesses that kill and restart an agent themselves (power_cuts.py).
        self.supervise = supervise
        self.printer_ids = printer_ids
        self.venue = "chaos" + secrets.token_hex(4)
        self.kiosk_token = secrets.token_urlsafe(24)
        self.operator_token = secrets.token_urlsafe(24)
        self.coordinator_settings = {**COORDINATOR_DEFAULTS, **(coordinator_settings or {})}
        self.agent_settings = {**AGENT_DEFAULTS, **(agent_settings or {})}
        # Tied to the thread that starts it (a worker of the loop's default executor,
        # which lives until the loop ends): a harness that dies leaves no server behind.
        self.redis = EmbeddedRedis(self.root / "redis", appendfsync=appendfsync)
        self.replicas = [Replica(n, free_port()) for n in range(1, coordinators + 1)]
        self.printers = {
            p: PrinterSlot(p, free_port(), free_port(), free_port(), secrets.token_urlsafe(24))
            for p in printer_ids
        }
        # printer -> the replica its agent talks to (through its proxy)
        self.assignment = {p: self.replicas[n % coordinators] for n, p in enumerate(printer_ids)}
        self.proxies = {p: FaultProxy(self.assignment[p].port) for p in printer_ids}
        self.processes: dict[str, ManagedProcess] = {}
        self._session: aiohttp.ClientSession | None = None
        # Each agent binds its status port itself (status_port = 0) and logs it; a
        # port picked here could be taken by any outgoing connection before the agent,
        # restarted minutes later after a kill -9, binds it (one start failed so).
        # printer -> where in its log the running agent's lines begin, and its URL once read
        self._agent_log_start: dict[str, int] = {}
        self._agent_status_urls: dict[str, str] = {}
        # Processes a fault stopped (restarted when it clears, not by the supervisor),
        # and what the supervisor saw exit on its own.
        self._stopped_by_fault: set[str] = set()
        self.unplanned_exits: list[str] = []
        self._supervisor: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ addresses

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise VenueError("the venue is not started")
        return self._session

    def emulator_url(self, printer_id: str) -> str:
        return f"http://127.0.0.1:{self.printers[printer_id].control_port}"

    def agent_status_url(self, printer_id: str) -> str:
        """The running agent's status URL, from its `status_serving` log line."""
        url = self._agent_status_urls.get(printer_id)
        if url is None:
            log = self._agent_log(printer_id)
            with log.open("rb") as lines:
                lines.seek(self._agent_log_start.get(printer_id, 0))
                for line in lines:
                    if b'"status_serving"' in line:
                        url = json.loads(line)["url"]
            if url is None:
                raise VenueError(f"{printer_id}'s agent has not logged its status URL yet")
            self._agent_status_urls[printer_id] = url
        return url + "/status"

    def _agent_log(self, printer_id: str) -> Path:
        return self.root / "logs" / f"agent-{printer_id}.log"

    def replica(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    # ------------------------------------------------------------ configs

    def _coordinator_config(self, replica: Replica) -> Path:
        config = {
            "venue": self.venue,
            "listen_port": replica.port,
            "state_dir": str(self.root / replica.name),
            "redis_url": self.redis.url,
            # The venue's own printers: jobs may name one before its agent reports.
            "known_printers": list(self.printers),
            **self.coordinator_settings,
            "tokens": tokens(self.kiosk_token, self.operator_token, self.printers.values()),
        }
        path = self.root / f"{replica.name}.toml"
        path.write_text(to_toml(config))
        return path

    def _agent_config(self, slot: PrinterSlot) -> Path:
        printer_id = slot.printer_id
        config = agent_config(slot, self.proxies[printer_id].url,
                              self.root / "agents" / printer_id, self.agent_settings)  # fmt: skip
        path = self.root / f"agent-{printer_id}.toml"
        path.write_text(to_toml(config))
        return path

    # ------------------------------------------------------------ processes

    def _spawn(self, name: str, *args: str) -> ManagedProcess:
        command = [sys.executable, "-m", "badgeline.cli", *args]
        managed = ManagedProcess(name, command, self.root / "logs" / f"{name}.log")
        self.processes[name] = managed
        self._stopped_by_fault.discard(name)
        managed.start()
        return managed

    async def _supervise(self) -> None:
        """Restart what exited on its own, like systemd would, and record it: without
        this a replica that exited stayed down until its next scheduled fault."""
        exited_at: dict[str, float] = {}
        while True:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            for name, managed in list(self.processes.items()):
                if managed.running or name in self._stopped_by_fault:
                    exited_at.pop(name, None)
                    continue
                if now - exited_at.setdefault(name, now) < RESTART_AFTER_S:
                    continue
                status = managed.process.returncode if managed.process else None
                self.unplanned_exits.append(
                    f"{name} exited on its own (status {status}) at "
                    f"{time.strftime('%H:%M:%S')}; restarted {RESTART_AFTER_S:g} s later"
                )
                exited_at.pop(name, None)
                self._restart(name)

    def _restart(self, name: str) -> None:
        if name.startswith("coordinator-"):
            self.start_coordinator(name)
        elif name.startswith("agent-"):
            self.start_agent(name.removeprefix("agent-"))
        elif name.startswith("emulator-"):
            self.start_emulator(name.removeprefix("emulator-"))

    def running(self, name: str) -> bool:
        process = self.processes.get(name)
        return process is not None and process.running

    async def start(self) -> None:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        await asyncio.to_thread(self.redis.start)
        for replica in self.replicas:
            self.start_coordinator(replica.name)
        for printer_id in self.printer_ids:
            self.start_emulator(printer_id)
        for proxy in self.proxies.values():
            await proxy.start()
        for replica in self.replicas:
            await self.wait_for(lambda r=replica: self.ok(r.url + "/healthz"), replica.name)
        for printer_id in self.printer_ids:
            url = self.emulator_url(printer_id) + "/status"
            await self.wait_for(lambda u=url: self.ok(u), f"emulator {printer_id}")
        for printer_id in self.printer_ids:
            self.start_agent(printer_id)
        await self.wait_for(self.all_printers_healthy, "every printer to report healthy")
        if self.supervise:
            self.start_supervisor()

    def start_supervisor(self) -> None:
        self._supervisor = asyncio.create_task(self._supervise())

    def start_emulator(self, printer_id: str) -> None:
        slot = self.printers[printer_id]
        self._spawn(f"emulator-{printer_id}", "emulator", "--port", str(slot.port),
                    "--control-port", str(slot.control_port),
                    "--out", str(self.root / "badges" / printer_id))  # fmt: skip

    def start_coordinator(self, name: str) -> None:
        replica = self.replica(name)
        self._spawn(name, "coordinator", "--config", str(self._coordinator_config(replica)))

    def kill_by_fault(self, name: str) -> None:
        """kill -9 a process that stays down until the fault clears and starts it."""
        self._stopped_by_fault.add(name)
        self.processes[name].kill()

    def kill_coordinator(self, name: str) -> None:
        self.kill_by_fault(name)

    def start_agent(self, printer_id: str) -> None:
        log = self._agent_log(printer_id)
        self._agent_log_start[printer_id] = log.stat().st_size if log.exists() else 0
        self._agent_status_urls.pop(printer_id, None)
        self._spawn(f"agent-{printer_id}", "agent", "--config",
                    str(self._agent_config(self.printers[printer_id])))  # fmt: skip

    def kill_agent(self, printer_id: str) -> None:
        self.kill_by_fault(f"agent-{printer_id}")

    async def kill_redis(self) -> None:
        await asyncio.to_thread(self.redis.kill)

    async def start_redis(self) -> None:
        await asyncio.to_thread(self.redis.start)

    async def set_fault(self, printer_id: str, fault: str) -> None:
        await self.post(self.emulator_url(printer_id) + "/fault", {"fault": fault})

    async def set_speed(self, printer_id: str, ms_per_badge: int) -> None:
        await self.post(self.emulator_url(printer_id) + "/speed", {"ms_per_badge": ms_per_badge})

    async def stop(self) -> None:
        """Everything the venue started goes, whatever state the run left it in."""
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        agents = [p for n, p in self.processes.items() if n.startswith("agent")]
        await asyncio.gather(*(asyncio.to_thread(p.stop, 5.0) for p in agents))
        for name, process in self.processes.items():
            if name.startswith("coordinator"):
                process.kill()
        others = [p for n, p in self.processes.items() if n.startswith("emulator")]
        await asyncio.gather(*(asyncio.to_thread(p.stop, 5.0) for p in others))
        for proxy in self.proxies.values():
            await proxy.stop()
        await asyncio.to_thread(self.redis.stop)
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ------------------------------------------------------------ HTTP

    async def ok(self, url: str) -> bool:
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=3)) as answer:
                return answer.status == 200
        return False

    async def post(self, url: str, body: Any) -> Any:
        async with self.session.post(url, json=body) as answer:
            answer.raise_for_status()
            return await answer.json()

    async def get(self, url: str, token: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with self.session.get(url, headers=headers) as answer:
            answer.raise_for_status()
            return await answer.json()

    async def api(self, path: str) -> Any:
        """GET from the first replica that answers (operator token)."""
        problem: Exception | None = None
        statuses = []
        for replica in self.replicas:
            try:
                return await self.get(replica.url + path, self.operator_token)
            except (aiohttp.ClientError, TimeoutError) as error:
                problem = error
                statuses.append(getattr(error, "status", None))
        raise VenueError(f"no replica answered {path}: {problem}",
                         not_found=all(status == 404 for status in statuses))  # fmt: skip

    async def post_api(self, path: str, body: Any) -> Any:
        """POST to the first replica that answers (operator token)."""
        headers = {"Authorization": f"Bearer {self.operator_token}"}
        problem: Exception | None = None
        for replica in self.replicas:
            try:
                async with self.session.post(replica.url + path, json=body,
                                             headers=headers) as answer:  # fmt: skip
                    answer.raise_for_status()
                    return await answer.json()
            except (aiohttp.ClientError, TimeoutError) as error:
                problem = error
        raise VenueError(f"no replica answered POST {path}: {problem}")

    async def printer_states(self) -> dict[str, str]:
        answer = await self.api("/v1/printers")
        return {p["printer_id"]: p["state"] for p in answer["items"]}

    async def all_printers_healthy(self) -> bool:
        try:
            states = await self.printer_states()
        except VenueError:
            return False
        return all(states.get(p) == "healthy" for p in self.printer_ids)

    async def printed_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for printer_id in self.printer_ids:
            for row in await self.get(self.emulator_url(printer_id) + "/printed"):
                rows.append({**row, "printer_id": printer_id})
        return rows

    async def wait_for(self, condition: Any, what: str, timeout_s: float = START_TIMEOUT_S,
                       interval_s: float = 0.2) -> None:  # fmt: skip
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not await condition():
            if asyncio.get_running_loop().time() > deadline:
                raise VenueError(f"timed out after {timeout_s} s waiting for {what}")
            await asyncio.sleep(interval_s)
