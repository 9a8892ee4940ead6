"""Jobs waiting for a printer, as an operator acts on them: move one to another
printer or pool (`badgeline move`), cancel all of one printer's (`badgeline cancel
--printer P --all`); and as their deadline passes (expire_after_s: JobExpiry).

Each is one Lua script call per job or batch (scripts/move_job-3.lua,
cancel_waiting-1.lua), which refuses a job a printer has started: the scripts
check the state in the same atomic step as the change.
"""

from __future__ import annotations

from dataclasses import dataclass

from badgeline.coordinator.store.jobs import (
    Route,
    no_printer_available,
    printer_rejecting,
    unknown_printer,
)
from badgeline.coordinator.store.records import JobTrace, Records, text
from badgeline.protocol.errors import BadgelineError, ErrorCode

# Jobs one cancel_waiting call cancels: a queue may hold up to 100 000 (high_water_mark),
# and one script call holds every other client of Redis while it runs.
CANCEL_BATCH = 200
# Jobs one expiry sweep call expires; the sweep calls again while calls come back full.
EXPIRE_BATCH = 200


@dataclass(frozen=True)
class MoveOutcome:
    job_id: str
    source: str  # the printer it was on
    printer_id: str  # the printer it is on now
    moved: bool  # False: it was on that printer already, nothing changed


class WaitingJobs(Records):
    async def cancel_waiting(
        self, printer_id: str, actor: str, reason: str
    ) -> list[tuple[str, JobTrace]]:
        """Cancel every job queued on the printer, or leased by its agent and not yet
        started, at the moment of the call (jobs accepted later are left alone); the
        canceled ones (the leased, then the queue in print order), with their traces."""
        k = self.keys
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zrange(k.queue(printer_id), 0, -1)
            pipe.smembers(k.leased(printer_id))
            queued, leased = await pipe.execute()
        job_ids = sorted(text(j) for j in leased) + [text(j) for j in queued]
        canceled: list[tuple[str, JobTrace]] = []
        for start in range(0, len(job_ids), CANCEL_BATCH):
            batch = job_ids[start : start + CANCEL_BATCH]
            reply = await self._run(
                "cancel_waiting", [k.leases], [k.prefix, printer_id, actor, reason, *batch]
            )
            canceled += [(text(j), JobTrace(text(key), text(cid))) for j, key, cid in reply]
        return canceled

    async def move(self, job_id: str, route: Route, actor: str) -> MoveOutcome:
        """Move a job no printer has started to `route`'s printer (named, or the least
        loaded fit one of its pool), keeping its id, key and place in print order."""
        k = self.keys
        reply = await self._run(
            "move_job",
            [k.job(job_id), k.leases, k.printers],
            [k.prefix, job_id, route.printer_id, *route.script_args(),
             self.settings.high_water_mark, actor, k.wake_channel,
             "1" if route.must_be_reported else ""],
        )  # fmt: skip
        code, detail, source = int(reply[0]), text(reply[1]), text(reply[2])
        if code in (0, 1):
            return MoveOutcome(job_id, source, detail, moved=code == 1)
        raise _move_refused(code, job_id, detail, source, route)


def _move_refused(code: int, job_id: str, detail: str, source: str, route: Route) -> BadgelineError:
    """What a refused move (move_job-3.lua's code) tells the operator."""
    if code == -2:
        return BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
    if code == -1:
        return BadgelineError(
            ErrorCode.NOT_MOVABLE,
            f"job {job_id} is {detail}: only a job no printer has started (queued, leased "
            "and not yet started, or parked) can be moved",
            extra={"job_id": job_id, "state": detail, "printer_id": source},
        )
    if code == -3:
        return no_printer_available(route)
    if code == -4:
        return unknown_printer(route.printer_id)
    if code == -5:
        return printer_rejecting(route.printer_id)
    why = "is dead" if code == -6 else f"has {detail} jobs waiting (its high-water mark)"
    return BadgelineError(
        ErrorCode.TARGET_UNAVAILABLE,
        f"printer {route.printer_id} {why}: job {job_id} stays on {source}; "
        "choose another printer or a pool",
        extra={"job_id": job_id, "printer_id": route.printer_id,
               "reason": "dead" if code == -6 else "full"},
    )  # fmt: skip


@dataclass(frozen=True)
class ExpiredJob:
    job_id: str
    printer_id: str
    was: str  # the state it waited in
    trace: JobTrace


class JobExpiry(Records):
    async def expire_due(self, actor: str, limit: int = EXPIRE_BATCH) -> list[ExpiredJob]:
        """Expire the waiting jobs whose deadline (expire_after_s) has passed (one
        script: expire_jobs-1.lua); the ones expired, with their traces."""
        k = self.keys
        reply = await self._run("expire_jobs", [k.expiring], [k.prefix, limit, actor])
        return [
            ExpiredJob(text(job_id), text(printer_id), text(was), JobTrace(text(key), text(cid)))
            for job_id, printer_id, was, key, cid in reply
        ]
