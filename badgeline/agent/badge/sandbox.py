"""Rasterise badges in a child process with a memory cap and a deadline.

The checks in `pdfcheck` bound what they can see, but PDFium parses a page
in one call that nothing in-process can interrupt, and a PDF can multiply
its own work: a 731-byte file that draws a 1,000-line form 1,000 times took
1.6 s and 270 MB here, and ten times the lines is ten times both. A Pi that
swaps or meets the OOM killer stops printing for everyone, so the agent runs
PDFium where it can be stopped: one long-lived worker process whose address
space is capped (RLIMIT_AS) and which is killed when a badge overruns its
deadline. A dead worker is replaced on the next badge.

The worker is started with "spawn": forking an asyncio process that has
threads running is unsafe. Starting costs a few hundred milliseconds once;
after that a badge costs the in-process time plus a pipe round trip. The
agent's own process never imports PDFium or Pillow for `badge_to_escpos`.
"""

from __future__ import annotations

import multiprocessing
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from badgeline.agent.badge.errors import BadgeRejected, RejectReason
from badgeline.agent.badge.pdfcheck import DEFAULT_LIMITS, BadgeLimits

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from PIL import Image


@dataclass(frozen=True)
class SandboxLimits:
    """What one badge may cost the worker process beyond what it uses at rest."""

    max_memory_bytes: int = 256 * 1024 * 1024
    timeout_seconds: float = 5.0
    # Spawning Python and importing PDFium and Pillow; slow on a Pi's SD card.
    start_timeout_seconds: float = 30.0


DEFAULT_SANDBOX = SandboxLimits()


class BadgeRenderWorker:
    """A PDFium worker process; thread-safe, one badge at a time.

    Use as a context manager, or call `start()` at agent start-up (so the
    first badge does not pay for the spawn) and `close()` at shutdown.
    """

    def __init__(
        self, limits: BadgeLimits = DEFAULT_LIMITS, sandbox: SandboxLimits = DEFAULT_SANDBOX
    ) -> None:
        self.limits = limits
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None

    def __enter__(self) -> BadgeRenderWorker:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> None:
        with self._lock:
            self._ensure_started()

    def close(self) -> None:
        with self._lock:
            self._stop()

    def badge_to_escpos(
        self, pdf_bytes: bytes, width_dots: int, job_id: str | None = None
    ) -> bytes:
        """Like `raster.badge_to_escpos`, run in the worker. Raises `BadgeRejected`."""
        return bytes(self._request(("escpos", bytes(pdf_bytes), width_dots, job_id)))

    def render_badge(self, pdf_bytes: bytes, width_dots: int) -> Image.Image:
        """Like `raster.render_badge`, run in the worker. Raises `BadgeRejected`."""
        from PIL import Image

        size, packed = self._request(("image", bytes(pdf_bytes), width_dots, None))
        return Image.frombytes("1", size, packed)

    def _request(self, request: tuple[str, bytes, int, str | None]) -> Any:
        with self._lock:
            connection = self._ensure_started()
            try:
                connection.send(request)
                if not connection.poll(self.sandbox.timeout_seconds):
                    self._stop()
                    raise BadgeRejected(
                        RejectReason.TOO_COMPLEX,
                        f"The badge PDF took more than {self.sandbox.timeout_seconds:g} s to "
                        "render; a badge takes milliseconds. Simplify it and export again.",
                    )
                outcome, payload = connection.recv()
            except (EOFError, OSError):
                self._stop()
                raise BadgeRejected(
                    RejectReason.TOO_COMPLEX,
                    "The badge PDF needed more memory than a badge may use "
                    f"({self.sandbox.max_memory_bytes // (1024 * 1024)} MiB) and was abandoned. "
                    "Simplify it and export again.",
                ) from None
        return _unwrap(outcome, payload)

    def _ensure_started(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._connection:
            return self._connection
        self._stop()
        context = multiprocessing.get_context("spawn")
        parent_end, child_end = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(child_end, self.limits, self.sandbox.max_memory_bytes),
            name="badgeline-badge-render",
            daemon=True,
        )
        process.start()
        child_end.close()
        self._process, self._connection = process, parent_end
        if not parent_end.poll(self.sandbox.start_timeout_seconds):
            self._stop()
            raise RuntimeError("the badge render worker did not start in time")
        parent_end.recv()  # "ready": imports done and memory capped
        return parent_end

    def _stop(self) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._process.close()
        self._process, self._connection = None, None


def _unwrap(outcome: str, payload: Any) -> Any:
    if outcome == "ok":
        return payload
    if outcome in ("rejected", "exhausted"):
        reason, message = payload
        raise BadgeRejected(RejectReason(reason), message)
    if outcome == "value_error":
        raise ValueError(payload)
    raise RuntimeError(f"badge render worker failed: {payload}")


def _serve(connection: Connection, limits: BadgeLimits, max_memory_bytes: int) -> None:
    """The worker's loop: one request in, one outcome out, until the pipe closes."""
    from badgeline.agent.badge import raster

    _cap_own_memory(max_memory_bytes)
    connection.send("ready")
    while True:
        try:
            kind, pdf_bytes, width_dots, job_id = connection.recv()
        except EOFError:
            return
        outcome = _handle(raster, kind, pdf_bytes, width_dots, job_id, limits)
        connection.send(outcome)
        if outcome[0] == "exhausted":
            return  # the heap may be in a poor state: let the parent start afresh


def _handle(
    raster: Any,
    kind: str,
    pdf_bytes: bytes,
    width_dots: int,
    job_id: str | None,
    limits: BadgeLimits,
) -> tuple[str, Any]:
    try:
        if kind == "escpos":
            return "ok", raster.badge_to_escpos(pdf_bytes, width_dots, job_id, limits)
        image = raster.render_badge(pdf_bytes, width_dots, limits)
        return "ok", (image.size, image.tobytes())
    except BadgeRejected as rejected:
        return "rejected", (rejected.reason_code.value, rejected.message)
    except ValueError as error:
        return "value_error", str(error)
    except MemoryError:
        return "exhausted", (
            RejectReason.TOO_COMPLEX.value,
            "The badge PDF needed more memory than a badge may use. Simplify it.",
        )
    except Exception as error:  # the worker must answer, whatever PDFium did
        return "error", repr(error)


def _cap_own_memory(max_memory_bytes: int) -> None:
    import resource

    import PIL.Image  # noqa: F401  (load now so the cap measures a warm worker)
    import pypdfium2  # noqa: F401

    with open("/proc/self/statm") as statm:
        resting_bytes = int(statm.read().split()[0]) * resource.getpagesize()
    limit = resting_bytes + max_memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # A worker killed by PDFium running out of memory should not leave a core file.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
