"""Which jobs a caller may see: a kiosk its own and its group's, an operator every one.

The accept script records who submitted a job on its hash (accept-7.lua: `kiosk`,
the kiosk token's name, '' for an operator's job, and `kiosk_group`, its group
or ''). A kiosk token reads, lists and cancels only the jobs submitted with its
own name or by a kiosk of its configured group. Another kiosk's job is answered
exactly like a job that does not exist (404 `not_found`, the same message), so
a kiosk cannot probe which ids exist. A job's submitter never changes after
acceptance, so checking it before acting (cancel) leaves no window.

A job accepted by a release that did not record `kiosk` still names its
submitting token in `source` (`kiosk:<name>`): that kiosk keeps seeing it (a
kiosk that submitted through an older replica during a rolling upgrade must not
lose its own job), but it is shared with no group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from badgeline.coordinator.api.auth import Identity
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.models import JobView

if TYPE_CHECKING:  # store.py imports JobOwner from here
    from badgeline.coordinator.store.jobs import JobStore

# The job hash fields JobOwner is read from, in this order (accept-7.lua returns
# the same three for a key it already holds).
OWNER_FIELDS = ("kiosk", "kiosk_group", "source")
_KIOSK_SOURCE = "kiosk:"


@dataclass(frozen=True)
class JobOwner:
    kiosk: str = ""  # the submitting kiosk token's name; '' when no kiosk submitted it
    group: str = ""  # that kiosk's group when it submitted; '' for none

    @classmethod
    def of(cls, identity: Identity) -> JobOwner:
        """What a job submitted by this caller records."""
        if identity.role != "kiosk":
            return cls()
        return cls(identity.name, identity.group or "")

    @classmethod
    def from_fields(cls, kiosk: Any, group: Any, source: Any) -> JobOwner:
        """From the OWNER_FIELDS of a job hash (bytes, str or None when absent)."""
        if kiosk is None:  # recorded before submitters were: `source` names the token
            text = _text(source)
            return cls(text.removeprefix(_KIOSK_SOURCE) if text.startswith(_KIOSK_SOURCE) else "")
        return cls(_text(kiosk), _text(group))

    @classmethod
    def from_hash(cls, fields: dict[Any, Any]) -> JobOwner:
        """From a job hash as HGETALL reads it."""
        text = {_text(key): value for key, value in fields.items()}
        return cls.from_fields(*(text.get(name) for name in OWNER_FIELDS))


class IdempotencyConflict(BadgelineError):
    """The key names a job with another payload (store.accept); `owner` is that job's, so
    the caller can tell whether the asker may learn of it (its id is in `extra`)."""

    def __init__(self, message: str, job_id: str, owner: JobOwner) -> None:
        super().__init__(ErrorCode.IDEMPOTENCY_CONFLICT, message, extra={"job_id": job_id})
        self.owner = owner


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


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


async def owner_of(store: JobStore, job_id: str) -> JobOwner | None:
    """The job's submitter; None when there is no such job."""
    key = store.keys.job(job_id)
    async with store.redis.pipeline(transaction=False) as pipe:
        pipe.exists(key)
        pipe.hmget(key, list(OWNER_FIELDS))
        exists, fields = await pipe.execute()
    return JobOwner.from_fields(*fields) if exists else None


async def check_visible(store: JobStore, identity: Identity, job_id: str) -> None:
    """Raise the unknown-job 404 unless the job exists and the caller may see it."""
    if identity.role == "operator":
        return  # operators see every job; an unknown one is the handler's 404
    owner = await owner_of(store, job_id)
    if owner is None or not may_see(identity, owner):
        raise no_such_job(job_id)


async def visible_job(store: JobStore, identity: Identity, job_id: str) -> JobView:
    """The job, or the unknown-job 404 when there is none or the caller may not see it."""
    found = await store.get_owned_job(job_id)
    if found is None or not may_see(identity, found[1]):
        raise no_such_job(job_id)
    return found[0]


async def visible_jobs(store: JobStore, identity: Identity, views: list[JobView]) -> list[JobView]:
    """The views among these the caller may see, in their order."""
    if identity.role == "operator":
        return views
    async with store.redis.pipeline(transaction=False) as pipe:
        for view in views:
            pipe.hmget(store.keys.job(view.job_id), list(OWNER_FIELDS))
        owners = [JobOwner.from_fields(*fields) for fields in await pipe.execute()]
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
