"""The only code that speaks Redis: keys, the Lua scripts, the connection, and
typed records per concern.

    store = Store(redis, settings)
    outcome = await store.jobs.accept(job, route=..., correlation_id=..., actor=...)
    beat = await store.printers.heartbeat(printer_id, request, verdict)

Callers get typed outcomes and `BadgelineError`s; none of them sees a Redis reply,
a key or a script name. `STORE_UNAVAILABLE` names the errors that mean Redis
cannot be reached (the HTTP layer answers them 503).
"""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.access import (
    ArtifactRecords,
    EnrolmentRecords,
    LimitCounters,
    SessionRecords,
)
from badgeline.coordinator.store.connection import RedisClient
from badgeline.coordinator.store.events import EventRecords
from badgeline.coordinator.store.failovers import FailoverRecords
from badgeline.coordinator.store.jobs import JobRecords
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.leases import LeaseRecords
from badgeline.coordinator.store.printers import PrinterRecords
from badgeline.coordinator.store.reports import ReportQueries
from badgeline.coordinator.store.retention import RetentionRecords
from badgeline.coordinator.store.script_loader import load_scripts
from badgeline.coordinator.store.upgrade import DataFormat
from badgeline.coordinator.store.waiting import JobExpiry, WaitingJobs
from badgeline.coordinator.store.wake_channel import WakeChannel

STORE_UNAVAILABLE = (RedisConnectionError, RedisTimeoutError)


class Store:
    def __init__(self, redis: RedisClient, settings: CoordinatorSettings) -> None:
        self._redis = redis
        self.settings = settings
        self.keys = VenueKeys(settings.venue)
        parts = (redis, settings, self.keys, load_scripts(redis))
        self.jobs = JobRecords(*parts)
        self.waiting = WaitingJobs(*parts)
        self.expiry = JobExpiry(*parts)
        self.events = EventRecords(*parts)
        self.leases = LeaseRecords(*parts)
        self.printers = PrinterRecords(*parts)
        self.failovers = FailoverRecords(*parts)
        self.reports = ReportQueries(*parts)
        self.retention = RetentionRecords(*parts)
        self.sessions = SessionRecords(*parts)
        self.enrolment = EnrolmentRecords(*parts)
        self.artifacts = ArtifactRecords(*parts)
        self.limits = LimitCounters(*parts)
        self.data_format = DataFormat(*parts)
        self.wake_channel = WakeChannel(redis, self.keys.wake_channel)

    async def ping(self) -> None:
        """Raises unless Redis answers (the coordinator's /healthz)."""
        await self._redis.ping()
