"""Which jobs a caller may see: a kiosk its own and its group's, an operator every one.

The accept script records who submitted a job on its hash (accept-7.lua:
`kiosk`, the kiosk token's name, '' for an operator's job, and `kiosk_group`,
its group or ''; read as a store.records.JobOwner). A kiosk token reads,
lists and cancels only the jobs submitted with its own name or by a kiosk of
its configured group. Another kiosk's job is answered
exactly like a job that does not exist (404 `not_found`, the same message), so
a kiosk cannot probe which ids exist. A job's submitter never changes after
acceptance, so checking it before acting (cancel) leaves no window.

A job accepted by a release that did not record `kiosk` still names its
submitting token in `source` (`kiosk:<name>`): that kiosk keeps seeing it (a
kiosk that submitted through an older replica during a rolling upgrade must not
lose its own job), but it is shared with no group.

A job that has left Redis after `job_retention_s` (control/retention.py) is read
from the audit export for an operator only; to a kiosk it is an unknown job.
"""

from __future__ import annotations

import asyncio

from badgeline.coordinator.api.auth import Identity
from badgeline.coordinator.control.audit_export import AuditExport, retired_view
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.records import JobOwner
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.models import JobView


def submitter(identity: Identity) -> JobOwner:
    """What a job submitted by this caller records."""
    if identity.role != "kiosk":
        return JobOwner()
    return JobOwner(identity.name, identity.group or "")


def may_see(identity: Identity, owner: JobOwner) -> bool:
    if identity.role == "operator":
        return True
    if identity.role != "kiosk":
        return False
    if owner.kiosk and owner.kiosk == identity.name:
        return True
    return bool(identity.group) and owner.group == identity.group


def no_such_job(job_id: str) -> BadgelineError:
    """The answer for an unknown job and for a job the caller may not see: one answer."""
    return BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")


async def check_visible(store: Store, identity: Identity, job_id: str) -> None:
    """Raise the unknown-job 404 unless the job exists and the caller may see it."""
    if identity.role == "operator":
        return  # operators see every job; an unknown one is the handler's 404
    owner = await store.jobs.owner_of(job_id)
    if owner is None or not may_see(identity, owner):
        raise no_such_job(job_id)


async def visible_job(
    store: Store, identity: Identity, job_id: str, export: AuditExport | None = None
) -> JobView:
    """The job, or the unknown-job 404 when there is none or the caller may not see it.
    An operator also gets a job that has left Redis, from the audit `export`: a
    lookup there reads the export's files, which a kiosk's guesses must not cost."""
    found = await store.jobs.get_owned(job_id)
    operator = identity.role == "operator"
    if found is None and export is not None and operator:
        retired = await asyncio.to_thread(export.find, job_id)
        if retired is not None:
            return retired_view(*retired)
    if found is None or not may_see(identity, found[1]):
        raise no_such_job(job_id)
    return found[0]


async def visible_jobs(store: Store, identity: Identity, views: list[JobView]) -> list[JobView]:
    """The views among these the caller may see, in their order."""
    if identity.role == "operator":
        return views
    owners = await store.jobs.owners_of([view.job_id for view in views])
    return [view for view, owner in zip(views, owners, strict=True) if may_see(identity, owner)]


def idempotency_key_taken(idempotency_key: str) -> BadgelineError:
    """A key another kiosk's job holds. One answer whatever that job's payload, and
    without its id: a kiosk learns only that the key is taken, never the job or
    whether a guessed payload matches it."""
    return BadgelineError(
        ErrorCode.IDEMPOTENCY_CONFLICT,
        f"idempotency_key {idempotency_key!r} is already used by a job this kiosk cannot see; "
        "use a new key for this badge",
    )
