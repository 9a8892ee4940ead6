"""Small builders shared by tests."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import Any


def job_body(printer_target: str = "printer-a", **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "attendee_id": "att_" + secrets.token_hex(4),
        "badge_pdf_ref": "https://badges.example/att.pdf",
        "printer_target": printer_target,
        "priority": 100,
        "idempotency_key": "scan-" + secrets.token_hex(8),
    }
    body.update(overrides)
    return body


def findings(report: dict[str, Any], finding: str) -> list[dict[str, Any]]:
    """The jobs on one of the reconciliation's lists (GET /v1/reconcile's items)."""
    return [item for item in report["items"] if item["finding"] == finding]


async def wait_for(
    condition: Callable[[], Awaitable[Any]], timeout_s: float = 10.0, interval_s: float = 0.02
) -> Any:
    """Poll an async condition until it is truthy; fail loudly on timeout."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        result = await condition()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s (last: {result!r})")
        await asyncio.sleep(interval_s)


@contextlib.contextmanager
def taken_port() -> Iterator[int]:
    """A loopback port something is listening on, for as long as the block runs."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]
