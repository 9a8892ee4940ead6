"""The badge rules, applied where badges arrive: every upload to the artifact store.

The same checks the agent runs before it prints (badgeline.badge.pdfcheck:
size, PDF header, encryption, pages, page size, embedded fonts, compression,
complexity), so a kiosk hears at upload, in the answer to its PUT, why a badge
will never print, instead of a `failed` job long after. The render itself,
at each printer's width, stays with the agent.

An upload comes from outside, so PDFium runs where a hostile file can be
stopped: the same memory-capped, deadline-bound worker process the agent uses
(badgeline.badge.sandbox), one per coordinator process, started by the first
upload and kept. Uploads wait their turn for it without holding a thread.
"""

from __future__ import annotations

import asyncio
import dataclasses

from badgeline.badge import DEFAULT_LIMITS, BadgeLimits, BadgeRejected, BadgeRenderWorker

__all__ = ["BadgeChecker", "BadgeRejected", "CheckerUnavailable"]


class CheckerUnavailable(Exception):
    """The check worker could not start (the server is out of memory or processes)."""


class BadgeChecker:
    def __init__(self, max_bytes: int) -> None:
        self.limits: BadgeLimits = dataclasses.replace(DEFAULT_LIMITS, max_bytes=max_bytes)
        self._worker = BadgeRenderWorker(self.limits)
        self._turn = asyncio.Lock()

    async def check(self, pdf: bytes) -> None:
        """Return if `pdf` passes the badge rules; `BadgeRejected` with the reason if not."""
        async with self._turn:
            try:
                await asyncio.to_thread(self._worker.check_badge_pdf, pdf)
            except RuntimeError as error:
                raise CheckerUnavailable(str(error)) from error

    async def close(self) -> None:
        await asyncio.to_thread(self._worker.close)
