"""Rasterise badges in a child process with a memory cap and a deadline.

The checks in `pdfcheck` bound what they can see, but PDFium parses a page
in one call that nothing in-process can interrupt, and a PDF can multiply
its own work: a 731-byte file that draws a 1,000-line form 1,000 times took
1.6 s and 270 MB here, and ten times the lines is ten times both. A Pi that
swaps or meets the OOM killer stops printing for everyone, so the agent runs
PDFium where it can be stopped: one long-lived worker process whose address
space is capped (RLIMIT_AS) and which is killed when a badge overruns its
deadline. A dead worker is replaced on the next badge.

The worker is a plain subprocess (`render_worker`, over pipes; see there why
not multiprocessing). `start()` only spawns it and returns: the worker loads
PDFium and Pillow while the agent goes on starting, and the first badge
waits for it to be ready. After that a badge costs the in-process time plus
a pipe round trip. The agent's own process never imports PDFium or Pillow
for `badge_to_escpos`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from badgeline.badge.errors import BadgeRejected, RejectReason
from badgeline.badge.layout import LabelLayout
from badgeline.badge.limits import DEFAULT_LIMITS, BadgeLimits
from badgeline.badge.render_worker import (
    FRAME_HEADER,
    WORKER_COMMAND,
    Frame,
    decode_meta,
    encode_frame,
)

if TYPE_CHECKING:
    from PIL import Image

# What a worker may send back in one frame: far above any badge (a 2,048-dot
# wide page of the tallest allowed aspect is 2.6 MB), far below harm.
MAX_META_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SandboxLimits:
    """What one badge may cost the worker process beyond what it uses at rest."""

    max_memory_bytes: int = 256 * 1024 * 1024
    timeout_seconds: float = 5.0
    # Starting Python and importing PDFium and Pillow; slow on a Pi's SD card.
    start_timeout_seconds: float = 30.0


DEFAULT_SANDBOX = SandboxLimits()


class _WorkerGone(Exception):
    """The worker closed its end of a pipe: it died, most likely at its memory cap."""


class BadgeRenderWorker:
    """A PDFium worker process; thread-safe, one badge at a time.

    Use as a context manager, or call `start()` at agent start-up (so the
    first badge does not pay for the whole start) and `close()` at shutdown.
    """

    def __init__(
        self, limits: BadgeLimits = DEFAULT_LIMITS, sandbox: SandboxLimits = DEFAULT_SANDBOX
    ) -> None:
        self.limits = limits
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._ready = False

    def __enter__(self) -> BadgeRenderWorker:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The worker's process id, while one is running."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> None:
        """Spawn the worker unless one runs; returns without waiting for it to be ready."""
        with self._lock:
            if self.pid is None:
                self._spawn()

    def close(self) -> None:
        with self._lock:
            self._stop()

    def badge_to_escpos(
        self, pdf_bytes: bytes, width_dots: int, job_id: str | None = None
    ) -> bytes:
        """Like `raster.badge_to_escpos`, run in the worker. Raises `BadgeRejected`."""
        _, body = self._request("escpos", pdf_bytes, width_dots, job_id)
        return body

    def badge_to_label(
        self, pdf_bytes: bytes, layout: LabelLayout, footer: str | None = None
    ) -> tuple[tuple[int, int], bytes]:
        """Like `raster.render_label`, run in the worker: the label's size and its packed
        mode "1" pixels (1 = white). Raises `BadgeRejected`."""
        meta, packed = self._request("label", pdf_bytes, layout.width_dots, None,
                                     layout=layout.to_json(), footer=footer)  # fmt: skip
        width, height = (int(side) for side in meta["size"])
        return (width, height), packed

    def check_badge_pdf(self, pdf_bytes: bytes) -> None:
        """Like `pdfcheck.check_badge_pdf`, run in the worker: the checks, no render.
        Raises `BadgeRejected`."""
        self._request("check", pdf_bytes, 0, None)

    def render_badge(self, pdf_bytes: bytes, width_dots: int) -> Image.Image:
        """Like `raster.render_badge`, run in the worker. Raises `BadgeRejected`."""
        from PIL import Image

        meta, packed = self._request("image", pdf_bytes, width_dots, None)
        width, height = (int(side) for side in meta["size"])
        return Image.frombytes("1", (width, height), packed)

    def _request(
        self, kind: str, pdf_bytes: bytes, width_dots: int, job_id: str | None, **more: Any
    ) -> Frame:
        request = encode_frame(
            {"kind": kind, "width_dots": width_dots, "job_id": job_id, **more}, bytes(pdf_bytes)
        )
        with self._lock:
            process = self._ready_worker()
            assert process.stdin is not None and process.stdout is not None
            deadline = time.monotonic() + self.sandbox.timeout_seconds
            try:
                _write_all(process.stdin, request, deadline)
                meta, body = _read_frame(process.stdout, deadline)
            except TimeoutError:
                self._stop()
                raise BadgeRejected(
                    RejectReason.TOO_COMPLEX,
                    f"The badge PDF took more than {self.sandbox.timeout_seconds:g} s to "
                    "render; a badge takes milliseconds. Simplify it and export again.",
                ) from None
            except (_WorkerGone, OSError, ValueError):
                # ValueError: a garbled frame, which only a broken worker sends.
                self._stop()
                raise BadgeRejected(
                    RejectReason.TOO_COMPLEX,
                    "The badge PDF needed more memory than a badge may use "
                    f"({self.sandbox.max_memory_bytes // (1024 * 1024)} MiB) and was abandoned. "
                    "Simplify it and export again.",
                ) from None
            if meta.get("outcome") == "exhausted":
                self._stop()  # it exits after saying so: reap it now
        return _unwrap(meta, body)

    def _ready_worker(self) -> subprocess.Popen[bytes]:
        """The running worker, once it said it is ready; spawns one if none runs."""
        if self.pid is None:
            self._spawn()
        process = self._process
        assert process is not None and process.stdout is not None
        if not self._ready:
            deadline = time.monotonic() + self.sandbox.start_timeout_seconds
            try:
                meta, _ = _read_frame(process.stdout, deadline)
            except (TimeoutError, _WorkerGone, OSError, ValueError) as error:
                self._stop()
                raise RuntimeError(
                    f"the badge render worker did not start: {type(error).__name__}"
                ) from None
            if meta.get("outcome") != "ready":
                self._stop()
                raise RuntimeError(f"the badge render worker said {meta!r:.200} at start")
            self._ready = True
        return process

    def _spawn(self) -> None:
        self._stop()
        limits = json.dumps(dataclasses.asdict(self.limits))
        try:
            self._process = subprocess.Popen(
                [sys.executable, *WORKER_COMMAND, str(self.sandbox.max_memory_bytes), limits],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # stderr is the agent's: a worker's traceback lands in the agent's log.
            )
        except OSError as error:  # out of processes or memory: the badge says why
            raise RuntimeError(f"the badge render worker could not start: {error}") from error
        self._ready = False

    def _stop(self) -> None:
        process, self._process = self._process, None
        self._ready = False
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()
        process.wait()


def _write_all(pipe: IO[bytes], data: bytes, deadline: float) -> None:
    """Write `data` to the worker, waiting at most until `deadline` for it to take more."""
    fd = pipe.fileno()
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            _wait(fd, select.POLLOUT, deadline)
            continue
        except BrokenPipeError:
            raise _WorkerGone from None
        view = view[written:]


def _read_frame(pipe: IO[bytes], deadline: float) -> Frame:
    fd = pipe.fileno()
    meta_size, body_size = FRAME_HEADER.unpack(_read_exactly(fd, FRAME_HEADER.size, deadline))
    if meta_size > MAX_META_BYTES or body_size > MAX_BODY_BYTES:
        raise ValueError(f"the worker sent a frame of {meta_size} + {body_size} bytes")
    meta = decode_meta(_read_exactly(fd, meta_size, deadline))
    return meta, _read_exactly(fd, body_size, deadline)


def _read_exactly(fd: int, count: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < count:
        _wait(fd, select.POLLIN, deadline)
        chunk = os.read(fd, count - len(data))
        if not chunk:
            raise _WorkerGone
        data += chunk
    return bytes(data)


def _wait(fd: int, events: int, deadline: float) -> None:
    """Until `fd` is ready for `events`; TimeoutError at `deadline`. A hang-up counts as ready."""
    poller = select.poll()
    poller.register(fd, events)
    remaining_ms = max(0.0, deadline - time.monotonic()) * 1000
    if not poller.poll(remaining_ms):
        raise TimeoutError


def _unwrap(meta: dict[str, Any], body: bytes) -> Frame:
    outcome = meta.get("outcome")
    if outcome == "ok":
        return meta, body
    if outcome in ("rejected", "exhausted"):
        raise BadgeRejected(RejectReason(meta["reason"]), str(meta["message"]))
    if outcome == "value_error":
        raise ValueError(meta.get("message"))
    raise RuntimeError(f"badge render worker failed: {meta.get('message')!s:.500}")
