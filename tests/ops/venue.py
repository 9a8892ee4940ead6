"""A venue for the operator tests: the coordinator app on a real socket
(AppRunner + TCPSite on port 0), agents played over its HTTP API, and the
operator CLI run as a real subprocess (`python -m badgeline.cli …`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, web

from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.helpers import job_body

REPO = Path(__file__).resolve().parents[2]
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}
CLI_TIMEOUT_S = 60


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def line(self, starting: str) -> str:
        """The table row that starts with `starting` (e.g. a printer id)."""
        rows = [row for row in self.out.splitlines() if row.startswith(starting)]
        assert len(rows) == 1, f"no single row starting {starting!r} in:\n{self.out}"
        return rows[0]

    def block(self, title: str) -> str:
        """The paragraph of the output that starts with `title`."""
        blocks = [b for b in self.out.split("\n\n") if b.startswith(title)]
        assert len(blocks) == 1, f"no single block {title!r} in:\n{self.out}"
        return blocks[0]


@dataclass
class PlayedAgent:
    """One printer's agent, played over the agent API: it heartbeats its
    `health` in the background and, while `printing` is set, leases, starts
    and acks `printed` every job it is given."""

    venue: Venue
    printer_id: str
    health: dict[str, Any] = field(default_factory=lambda: dict(HEALTHY))
    printing: asyncio.Event = field(default_factory=asyncio.Event)
    printed: list[str] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return auth(agent_token(self.printer_id))

    async def call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return await self.venue.api("POST", f"/v1/agents/{self.printer_id}{path}",
                                    self.headers, body)  # fmt: skip

    async def heartbeat(self, **health: Any) -> str:
        self.health.update(health)
        body = {"agent_id": f"pi-{self.printer_id}", "version": "test", "health": self.health}
        state: str = (await self.call("/heartbeat", body))["state"]
        return state

    async def lease(self, max_jobs: int = 1, wait: float = 0) -> list[dict[str, Any]]:
        jobs: list[dict[str, Any]] = (await self.call(f"/lease?max={max_jobs}&wait={wait}"))["jobs"]
        return jobs

    async def start(self, leased: dict[str, Any]) -> Any:
        return await self.call(f"/jobs/{leased['job_id']}/start", {"lease_id": leased["lease_id"]})

    async def ack(self, leased: dict[str, Any], result: str = "printed", error: str | None = None
                  ) -> Any:  # fmt: skip
        body: dict[str, Any] = {"lease_id": leased["lease_id"], "result": result}
        if error is not None:
            body["error"] = error
        return await self.call(f"/jobs/{leased['job_id']}/ack", body)

    async def print_next(self) -> str | None:
        jobs = await self.lease(wait=0.2)
        for leased in jobs:
            await self.start(leased)
            await self.ack(leased)
            self.printed.append(leased["job_id"])
        return jobs[0]["job_id"] if jobs else None

    def come_alive(self, *, printing: bool = False) -> PlayedAgent:
        if printing:
            self.printing.set()
        self.tasks += [asyncio.create_task(self._heartbeats()),
                       asyncio.create_task(self._print_loop())]  # fmt: skip
        return self

    async def _heartbeats(self) -> None:
        while True:
            await self.heartbeat()
            await asyncio.sleep(0.2)

    async def _print_loop(self) -> None:
        while True:
            await self.printing.wait()
            await self.print_next()

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


@dataclass
class Venue:
    url: str
    session: ClientSession
    agents: dict[str, PlayedAgent] = field(default_factory=dict)

    async def api(
        self, method: str, path: str, headers: dict[str, str],
        body: dict[str, Any] | None = None, status: int | None = None,
    ) -> Any:  # fmt: skip
        async with self.session.request(method, self.url + path, json=body,
                                        headers=headers) as response:  # fmt: skip
            payload = await response.json()
            expected = status or (201 if response.status == 201 else 200)
            assert response.status == expected, f"{method} {path}: {response.status} {payload}"
            return payload

    async def ops(self, method: str, path: str, body: dict[str, Any] | None = None,
                  status: int | None = None) -> Any:  # fmt: skip
        return await self.api(method, path, auth(OPERATOR_TOKEN), body, status)

    async def submit(self, printer_target: str, n: int = 1, status: int = 201,
                     **overrides: str) -> list[str]:  # fmt: skip
        ids = []
        for _ in range(n):
            body = job_body(printer_target, **overrides)
            accepted = await self.api("POST", "/v1/jobs", auth(KIOSK_TOKEN), body, status)
            ids.append(accepted["job_id"])
        return ids

    async def job(self, job_id: str) -> dict[str, Any]:
        found: dict[str, Any] = await self.ops("GET", f"/v1/jobs/{job_id}")
        return found

    def agent(self, printer_id: str) -> PlayedAgent:
        return self.agents.setdefault(printer_id, PlayedAgent(self, printer_id))

    async def printed_job(self, printer_id: str = "printer-a") -> str:
        """A job submitted and printed on `printer_id` (a badge that can be reprinted)."""
        agent = self.agent(printer_id)
        await agent.heartbeat()
        (job_id,) = await self.submit(printer_id)
        assert await agent.print_next() == job_id
        return job_id

    async def cli(self, *args: str, token: str | None = OPERATOR_TOKEN) -> CliResult:
        """The operator CLI as a subprocess; asyncio's, so this loop keeps serving."""
        env = {**os.environ, "BADGELINE_URL": self.url}
        env.pop("BADGELINE_TOKEN", None)
        if token is not None:
            env["BADGELINE_TOKEN"] = token
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "badgeline.cli", *args, cwd=REPO, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), CLI_TIMEOUT_S)
        assert process.returncode is not None
        return CliResult(process.returncode, out.decode(), err.decode())

    async def cli_ok(self, *args: str) -> CliResult:
        result = await self.cli(*args)
        assert result.code == 0, f"badgeline {' '.join(args)} -> {result.code}\n{result.err}"
        assert result.err == "", result.err
        return result


async def alive(venue: Venue, printer_id: str, *, printing: bool = False) -> PlayedAgent:
    """The printer's agent, heard from once already and heartbeating from now on."""
    agent = venue.agent(printer_id)
    await agent.heartbeat()
    return agent.come_alive(printing=printing)


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"
