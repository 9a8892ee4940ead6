"""bench_scale.py's bare reference: the kiosk and agent paths with no business logic.

    python bench/scale_bare.py --port P --redis-url URL --kiosk-sha256 HEX --printers N

A server process of its own (started by `BareVenue`), serving the paths and
auth headers the kiosks (benchkit's `post_paced`) and the simulated agents
(simagents.py) use, each handler doing only what any server of this protocol
must do for the request:

- identify the bearer token with the coordinator's own `TokenAuthority` (SHA-256
  and a dict lookup) and check an agent token is bound to the path's printer;
- parse and validate the body with the real protocol model (`PrintJob`,
  `HeartbeatRequest`, `StartRequest`, `AckRequest`) and the lease query;
- one EVALSHA of a script that returns at once (bench_accept's NOOP_SCRIPT): one
  Redis round trip per request, as bench_accept's bare handler makes, on the
  coordinator's own Redis client (redis_pool.WaitingConnectionPool: script calls
  pipelined on one connection, redis_lane.py), so the floor is not raised by a
  costlier client than the coordinator's;
- answer JSON of the shape the real one answers.

A submit puts the job on an in-process asyncio queue of its printer; a lease
long-poll parks on that queue until a job arrives or its wait ends, so agents
print 1 job/s and are idle otherwise, as against the coordinator. No
persistence, no lease expiry, no fencing, no events, no metrics: what is left
is the floor a Python/aiohttp server pays for this request mix on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import web
from bench_accept import NOOP_SCRIPT, serve_until_signalled
from benchkit import HOST, agent_token, printer_ids, spawn, stop_process, wait_until_serving
from pydantic import BaseModel, ValidationError
from redis.asyncio import Redis

from badgeline.coordinator.api.auth import (
    Identity,
    TokenAuthority,
    require_printer,
    require_role,
    token_digest,
)
from badgeline.coordinator.config import Role, TokenEntry
from badgeline.coordinator.store.embedded import free_port
from badgeline.coordinator.store.lane import FALL_BACK
from badgeline.coordinator.store.pool import WaitingConnectionPool
from badgeline.protocol.errors import HTTP_STATUS, BadgelineError
from badgeline.protocol.models import AckRequest, HeartbeatRequest, PrintJob, StartRequest

LEASE_TTL_S = 30.0
MAX_WAIT_S = 30.0
HEARTBEAT_INTERVAL_S = 1.0
ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass
class Venue:
    authority: TokenAuthority
    pool: WaitingConnectionPool
    sha: str  # of NOOP_SCRIPT, loaded at start-up
    queues: dict[str, asyncio.Queue[dict[str, Any]]] = field(default_factory=dict)
    fences: int = 0
    job_numbers: Iterator[int] = field(default_factory=itertools.count)

    def queue(self, printer_id: str) -> asyncio.Queue[dict[str, Any]]:
        return self.queues.setdefault(printer_id, asyncio.Queue())

    async def round_trip(self, key: str) -> None:
        if await self.pool.evalsha_once(self.sha, ["{bench}:bare:counter"], [key]) is FALL_BACK:
            raise RuntimeError("Redis lost the no-op script (restarted?)")


VENUE = web.AppKey("venue", Venue)


def _venue(request: web.Request, role: Role) -> tuple[Venue, Identity]:
    venue = request.app[VENUE]
    identity = venue.authority.identify(request.headers.get("Authorization"))
    if role == "agent":
        require_printer(identity, request.match_info["printer_id"])
    else:
        require_role(identity, "kiosk")
    return venue, identity


def _model(raw: bytes, model: type[ModelT]) -> ModelT:
    return model.model_validate_json(raw or b"{}")


@web.middleware
async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """The coordinator's error statuses, without its error body machinery."""
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except BadgelineError as error:
        return web.json_response({"code": error.code}, status=HTTP_STATUS[error.code])
    except ValidationError as error:
        body = {"code": "validation_failed", "errors": error.error_count()}
        return web.json_response(body, status=422)
    except Exception as error:  # as the coordinator: a JSON body whatever went wrong
        return web.json_response({"code": "internal_error", "message": repr(error)}, status=500)


async def submit(request: web.Request) -> web.Response:
    venue, _ = _venue(request, "kiosk")
    job = _model(await request.read(), PrintJob)
    await venue.round_trip(job.idempotency_key)
    job_id = f"job_{next(venue.job_numbers):012x}"
    queue = venue.queue(job.printer_target)
    queue.put_nowait({"job_id": job_id, "job": job.model_dump(mode="json") | {"attempts": 1}})
    body = {"job_id": job_id, "state": "queued", "printer_id": job.printer_target,
            "position": queue.qsize() - 1, "duplicate": False,
            "correlation_id": job_id}  # fmt: skip
    return web.json_response(body, status=201)


async def heartbeat(request: web.Request) -> web.Response:
    venue, _ = _venue(request, "agent")
    beat = _model(await request.read(), HeartbeatRequest)
    await venue.round_trip(beat.agent_id)
    body = {"state": "healthy", "paused": False, "heartbeat_interval_s": HEARTBEAT_INTERVAL_S}
    return web.json_response(body)


async def lease(request: web.Request) -> web.Response:
    venue, _ = _venue(request, "agent")
    try:
        wait_s = min(MAX_WAIT_S, max(0.0, float(request.query.get("wait", 0))))
        max_jobs = min(50, max(1, int(request.query.get("max", 1))))
    except ValueError:
        return web.json_response({"code": "validation_failed"}, status=422)
    queue = venue.queue(request.match_info["printer_id"])
    jobs = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(wait_s):
            jobs.append(await queue.get())
    while len(jobs) < max_jobs and not queue.empty():
        jobs.append(queue.get_nowait())
    # The round trip that would move the job to leased in Redis; after the wait, so a
    # job handed over pays it on its way, as the coordinator's lease script does.
    await venue.round_trip(request.match_info["printer_id"])
    leased = [{"job_id": j["job_id"], "lease_id": "lease_" + j["job_id"],
               "lease_ttl_s": LEASE_TTL_S, "job": j["job"]} for j in jobs]  # fmt: skip
    return web.json_response({"jobs": leased})


async def start(request: web.Request) -> web.Response:
    venue, _ = _venue(request, "agent")
    body = _model(await request.read(), StartRequest)
    await venue.round_trip(body.lease_id)
    venue.fences += 1
    return web.json_response({"granted": True, "fence": venue.fences, "reason": None})


async def ack(request: web.Request) -> web.Response:
    venue, _ = _venue(request, "agent")
    body = _model(await request.read(), AckRequest)
    await venue.round_trip(body.lease_id)
    job_id = request.match_info["job_id"]
    return web.json_response({"job_id": job_id, "state": "printed", "recorded": True})


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def serve(args: argparse.Namespace) -> None:
    entries = [TokenEntry(name="bench-kiosk", role="kiosk", sha256=args.kiosk_sha256)]
    entries += [TokenEntry(name=f"agent-{p}", role="agent", sha256=token_digest(agent_token(p)),
                           printer_id=p) for p in printer_ids(args.printers)]  # fmt: skip
    # The coordinator's defaults: redis_max_connections 512, redis_pool_wait_s 5.
    pool = WaitingConnectionPool.from_url(args.redis_url, max_connections=512, timeout=5.0)
    redis = Redis.from_pool(pool)
    sha = await redis.script_load(NOOP_SCRIPT)
    app = web.Application(middlewares=[errors])
    app[VENUE] = Venue(TokenAuthority(entries), pool, sha)
    app.router.add_post("/v1/jobs", submit)
    app.router.add_post("/v1/agents/{printer_id}/heartbeat", heartbeat)
    app.router.add_post("/v1/agents/{printer_id}/lease", lease)
    app.router.add_post("/v1/agents/{printer_id}/jobs/{job_id}/start", start)
    app.router.add_post("/v1/agents/{printer_id}/jobs/{job_id}/ack", ack)
    app.router.add_get("/healthz", healthz)
    await serve_until_signalled(app, args.port, redis)


@dataclass
class BareVenue:
    """The bare server in its own process, on a Redis the caller started."""

    work_dir: Path
    redis_url: str
    kiosk_token: str
    printers: int
    port: int = field(default_factory=free_port)
    process: Any = None  # subprocess.Popen[bytes] once started

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def start(self) -> None:
        log = self.work_dir / "bare.log"
        command = [sys.executable, str(Path(__file__).resolve()), "--port", str(self.port),
                   "--redis-url", self.redis_url, "--kiosk-sha256", token_digest(self.kiosk_token),
                   "--printers", str(self.printers)]  # fmt: skip
        self.process = spawn(command, log)
        await wait_until_serving(self.base_url + "/healthz", self.process, log)

    def stop(self) -> None:
        stop_process(self.process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--kiosk-sha256", required=True, help="SHA-256 of the kiosk token")
    parser.add_argument("--printers", type=int, required=True, help="agent tokens, as bench_accept")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
