"""Signed webhooks: each job event POSTed to every configured target that wants it.

Each target reads the venue's event stream through a consumer group of its own
(`webhook:<name>`, store/events.py), so every replica delivers and Redis hands each
event to one of them. An attempt answered 2xx is acknowledged; anything else (an
error status, a refused connection, no answer within `webhook_timeout_s`) leaves
the event pending, and any replica claims it again after
`min(2^(n-1) * webhook_backoff_unit_s, webhook_backoff_cap_s)`, until
`webhook_max_attempts`. An attempt starts only once its replica has restarted the
event's idle time while still holding it (webhook_hold-1.lua), and a claim waits
for an idle time longer than an attempt can run: two replicas never attempt one
event at once. Deliveries run as tasks, at most `webhook_concurrency` per target
and replica, so a target that hangs holds up none of the others, and nothing of
the coordinator. The events of one job within one read go out one after another,
in order.

Each body is the event as GET /v1/events sends it, signed: the header
`Badgeline-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, with
the target's secret as the key (docs/api.md, "Webhooks", shows how to check it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import socket
import time

import aiohttp

from badgeline.coordinator.config import CoordinatorSettings, WebhookTarget
from badgeline.coordinator.store.events import EventRecords, StoredEvent
from badgeline.log import log_event

SIGNATURE_HEADER = "Badgeline-Signature"
EVENT_ID_HEADER = "Badgeline-Event-Id"
# An event is claimed again only once idle this many times webhook_timeout_s: an
# attempt ends at its timeout, and a replica whose event loop stalled as long
# again is not yet taken for dead.
ATTEMPT_WINDOW_TIMEOUTS = 2.0
# How long a new event is waited for when nothing is due: also how often due
# retries are looked for.
READ_BLOCK_MS = 1000
# Consumers (replicas) idle this long with nothing pending are forgotten.
CONSUMER_IDLE_MS = 3600 * 1000
PRUNE_EVERY_S = 600.0


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    """The `Badgeline-Signature` header's value for this body at this time."""
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"t={timestamp},v1={digest.hexdigest()}"


def consumer_name() -> str:
    """This replica in the consumer groups: host, process and a random part."""
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{secrets.token_hex(3)}"


class WebhookDelivery:
    """One target's deliveries from this replica."""

    def __init__(
        self, events: EventRecords, target: WebhookTarget, settings: CoordinatorSettings,
        session: aiohttp.ClientSession, consumer: str,
    ) -> None:  # fmt: skip
        self.events = events
        self.target = target
        self.settings = settings
        self.session = session
        self.consumer = consumer
        self.group = f"webhook:{target.name}"
        self._secret = target.secret_bytes()
        self._kiosks = set(target.kiosks) if target.kiosks is not None else None
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._failing = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"webhook-{self.target.name}")

    async def stop(self) -> None:
        self._stopping = True
        for task in [*self._tasks, *([self._task] if self._task else [])]:
            task.cancel()
        # An attempt cut off here stays pending: another replica (or the next start)
        # claims it when its time is up, so a target may see that event again.
        for task in [*self._tasks, *([self._task] if self._task else [])]:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
                await asyncio.wait_for(task, timeout=5)

    async def _run(self) -> None:
        backoff, failing, pruned_at = 0.1, False, 0.0
        while not self._stopping:
            try:
                await self.events.ensure_group(self.group)
                if time.monotonic() - pruned_at > PRUNE_EVERY_S:
                    pruned_at = time.monotonic()
                    await self.events.prune_consumers(self.group, CONSUMER_IDLE_MS, self.consumer)
                while not self._stopping:
                    await self._step()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # Redis away: try again, never give up the loop
                if self._stopping:
                    return
                if not failing:
                    log_event("webhook_reader_failing", logging.WARNING,
                              webhook=self.target.name, error=repr(error))  # fmt: skip
                failing = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def _step(self) -> None:
        room = self.settings.webhook_concurrency - len(self._tasks)
        if room <= 0:
            await asyncio.wait(self._tasks, timeout=READ_BLOCK_MS / 1000,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            return
        s = self.settings
        due = await self.events.claim_due(
            self.group, self.consumer, room,
            attempt_ms=int(s.webhook_timeout_s * ATTEMPT_WINDOW_TIMEOUTS * 1000),
            backoff_unit_ms=int(s.webhook_backoff_unit_s * 1000),
            backoff_cap_ms=int(s.webhook_backoff_cap_s * 1000),
            max_attempts=s.webhook_max_attempts,
        )  # fmt: skip
        for entry_id in due.dropped:
            log_event("webhook_event_dropped", logging.ERROR, webhook=self.target.name,
                      event_id=entry_id, attempts=s.webhook_max_attempts)  # fmt: skip
        room -= len(due.events)
        block = None if due.events else READ_BLOCK_MS
        new = await self.events.read_new(self.group, self.consumer, room, block) if room else []
        self._deliver_all(due.events + new)

    def _deliver_all(self, entries: list[StoredEvent]) -> None:
        by_job: dict[str, list[StoredEvent]] = {}
        for entry in entries:
            by_job.setdefault(entry.job_id, []).append(entry)
        for job_entries in by_job.values():
            task = asyncio.create_task(self._deliver_in_order(job_entries))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _deliver_in_order(self, entries: list[StoredEvent]) -> None:
        for entry in entries:
            try:
                await self._deliver(entry)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # Redis away: the event stays pending, claimed later
                log_event("webhook_delivery_error", logging.WARNING, webhook=self.target.name,
                          event_id=entry.id, error=repr(error))  # fmt: skip

    async def _deliver(self, entry: StoredEvent) -> None:
        if self._kiosks is not None and entry.owner.kiosk not in self._kiosks:
            await self.events.ack(self.group, [entry.id])
            return
        if not await self.events.hold(self.group, self.consumer, entry.id):
            return  # another replica claimed it meanwhile: it is that one's now
        if await self._post(entry):
            await self.events.ack(self.group, [entry.id])

    async def _post(self, entry: StoredEvent) -> bool:
        body = entry.body_json().encode()
        headers = {
            "Content-Type": "application/json",
            EVENT_ID_HEADER: entry.id,
            SIGNATURE_HEADER: signature(self._secret, int(time.time()), body),
            "User-Agent": "badgeline-webhook",
        }
        timeout = aiohttp.ClientTimeout(total=self.settings.webhook_timeout_s)
        try:
            async with self.session.post(
                self.target.url, data=body, headers=headers, timeout=timeout, allow_redirects=False
            ) as answer:
                status = answer.status  # the body is not read: only the status counts
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            self._note_failure(entry, repr(error) or type(error).__name__)
            return False
        if 200 <= status < 300:
            if self._failing:
                log_event("webhook_recovered", webhook=self.target.name)
            self._failing = False
            return True
        self._note_failure(entry, f"HTTP {status}")
        return False

    def _note_failure(self, entry: StoredEvent, why: str) -> None:
        # One warning per episode, not one per event: a target down all afternoon
        # would otherwise write a line for every badge.
        if not self._failing:
            log_event("webhook_failing", logging.WARNING, webhook=self.target.name,
                      event_id=entry.id, error=why)  # fmt: skip
        self._failing = True


class Webhooks:
    """Every configured target's deliveries from this replica, with one HTTP session."""

    def __init__(self, events: EventRecords, settings: CoordinatorSettings) -> None:
        self.events = events
        self.settings = settings
        self.consumer = consumer_name()
        self._session: aiohttp.ClientSession | None = None
        self.deliveries: list[WebhookDelivery] = []

    async def start(self) -> None:
        if not self.settings.webhooks:
            return
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), raise_for_status=False
        )
        for target in self.settings.webhooks:
            delivery = WebhookDelivery(self.events, target, self.settings, self._session,
                                       self.consumer)  # fmt: skip
            # Before the first request: a target's group starts at the newest event,
            # and a job accepted before it existed would never reach the target.
            await self.events.ensure_group(delivery.group)
            delivery.start()
            self.deliveries.append(delivery)

    async def stop(self) -> None:
        for delivery in self.deliveries:
            await delivery.stop()
        if self._session is not None:
            await self._session.close()
