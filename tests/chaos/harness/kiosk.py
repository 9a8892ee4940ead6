"""Kiosks: submit badge jobs through faults, and remember exactly what they were told.

A kiosk retries a submission after a connection error, a timeout or a 5xx, with
the same body and so the same idempotency key, on the other replica next, with
capped exponential back-off and jitter, until it gets an answer that settles it:
201 (accepted), 200 (accepted before: `duplicate`), or a 4xx it cannot fix. A
503 `queue_full` shed the job (it went to the dead letters without claiming the
key): the kiosk notes the shed job's id and tries again after `Retry-After`
(5 s), as it does after a 429.

Now and then a kiosk also repeats a submission it already has an answer for
(a double scan): that must come back 200 with the same job id (invariant 2,
docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

RETRY_INITIAL_S = 0.1
RETRY_MAX_S = 2.0
SHED_WAIT_CAP_S = 5.0
REQUEST_TIMEOUT_S = 10.0
RESUBMIT_SHARE = 0.05


@dataclass
class Submission:
    """One badge a kiosk wants printed, and every answer it got about it."""

    kiosk: int
    body: dict[str, Any]
    job_id: str | None = None  # what the first 201/200 said
    status: int | None = None
    answered_at: float | None = None
    attempts: int = 0
    transient_failures: int = 0  # connection errors, timeouts, 5xx other than queue_full
    throttled: int = 0  # 429 answers (rate limits and quotas, when configured)
    shed_job_ids: list[str] = field(default_factory=list)
    other_job_ids: list[str] = field(default_factory=list)  # a later 200/201 naming another job
    refusal: dict[str, Any] | None = None  # a 4xx that settled it (409, 422, ...)
    duplicate_checks: int = 0

    @property
    def key(self) -> str:
        return str(self.body["idempotency_key"])

    @property
    def accepted(self) -> bool:
        return self.job_id is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kiosk": self.kiosk, "idempotency_key": self.key, "job_id": self.job_id,
            "status": self.status, "attempts": self.attempts,
            "transient_failures": self.transient_failures, "shed_job_ids": self.shed_job_ids,
            "other_job_ids": self.other_job_ids, "refusal": self.refusal,
        }  # fmt: skip


def plan_submissions(
    seed: int, jobs: int, kiosks: int, printers: tuple[str, ...], badge_ref: str
) -> list[Submission]:
    """The jobs each kiosk will submit, from the seed (keys carry the seed: runs never mix)."""
    rng = random.Random(seed)
    targets = [*printers, "auto"]
    plan = []
    for n in range(jobs):
        body = {
            "attendee_id": f"att-{seed}-{n:05d}",
            "badge_pdf_ref": badge_ref,
            "printer_target": rng.choice(targets),
            "priority": rng.choice((0, 50, 100, 100, 100, 500)),
            "idempotency_key": f"chaos-{seed}-{n:05d}-{rng.getrandbits(32):08x}",
        }
        plan.append(Submission(kiosk=n % kiosks, body=body))
    return plan


class Kiosk:
    def __init__(
        self,
        number: int,
        session: aiohttp.ClientSession,
        urls: list[str],
        token: str,
        submissions: list[Submission],
        *,
        seed: int,
        pace_s: float,
        give_up_at: float,
    ) -> None:
        self.number = number
        self.session = session
        self.urls = urls
        self.headers = {"Authorization": f"Bearer {token}"}
        self.submissions = submissions
        self.rng = random.Random(f"{seed}-kiosk-{number}")
        self.pace_s = pace_s
        self.give_up_at = give_up_at  # time.monotonic() after which a kiosk stops retrying
        self._replica = number % len(urls)

    async def run(self) -> None:
        done: list[Submission] = []
        for submission in self.submissions:
            await asyncio.sleep(self.rng.uniform(0.5, 1.5) * self.pace_s)
            await self.settle(submission)
            if submission.accepted:
                done.append(submission)
            if done and self.rng.random() < RESUBMIT_SHARE:
                await self.resubmit(self.rng.choice(done))

    async def settle(self, submission: Submission) -> None:
        delay = RETRY_INITIAL_S
        while time.monotonic() < self.give_up_at:
            submission.attempts += 1
            outcome, wait_s = await self._post(submission)
            if outcome == "settled":
                return
            if outcome == "shed":
                delay = RETRY_INITIAL_S
            else:
                submission.transient_failures += 1
                self._replica = (self._replica + 1) % len(self.urls)
                wait_s = self.rng.uniform(0.5, 1.0) * delay
                delay = min(delay * 2, RETRY_MAX_S)
            await asyncio.sleep(wait_s)

    async def resubmit(self, submission: Submission) -> None:
        """A double scan of a job that was accepted: one key, one job."""
        status, answer = await self._request(submission.body)
        if status in (200, 201) and answer is not None:
            submission.duplicate_checks += 1
            if answer.get("job_id") != submission.job_id or status != 200:
                submission.other_job_ids.append(f"{status}:{answer.get('job_id')}")

    async def _post(self, submission: Submission) -> tuple[str, float]:
        status, answer = await self._request(submission.body)
        if status in (200, 201) and answer is not None:
            job_id = str(answer["job_id"])
            if submission.job_id is None:
                submission.job_id, submission.status = job_id, status
                submission.answered_at = time.time()
            elif job_id != submission.job_id:
                submission.other_job_ids.append(job_id)
            return "settled", 0.0
        body = answer if isinstance(answer, dict) else {}
        if status == 429:  # a rate limit or quota: come back when told to, same key
            submission.throttled += 1
            return "shed", SHED_WAIT_CAP_S
        if status == 503 and body.get("error", {}).get("code") == "queue_full":
            if body.get("job_id"):
                submission.shed_job_ids.append(str(body["job_id"]))
            return "shed", SHED_WAIT_CAP_S
        if status is not None and 400 <= status < 500:
            submission.refusal = {"status": status, "body": answer}
            return "settled", 0.0
        return "retry", 0.0

    async def _request(self, body: dict[str, Any]) -> tuple[int | None, Any]:
        url = self.urls[self._replica] + "/v1/jobs"
        timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
        try:
            async with self.session.post(url, json=body, headers=self.headers,
                                         timeout=timeout) as answer:  # fmt: skip
                try:
                    return answer.status, await answer.json()
                except (aiohttp.ContentTypeError, ValueError):
                    return answer.status, None
        except (aiohttp.ClientError, TimeoutError, ConnectionError):
            return None, None
