"""The badge render worker's own side: ``main`` runs in the worker process.

The agent (``sandbox.BadgeRenderWorker``) starts this as a plain child process
over two pipes: requests on its stdin, answers on its stdout. A plain
subprocess rather than multiprocessing, because multiprocessing's "spawn"
start also starts a resource tracker process (13 MB here) and re-imports the
agent's main module in the worker; "fork" is unsafe in a process with threads.

Messages are frames: an 8-byte header (the lengths of a JSON part and of a
bytes part), the JSON, the bytes. Not pickle: the worker parses hostile PDFs,
and a worker that PDFium let someone take over must not be able to run code
in the agent by what it answers. The agent also caps each frame's size.

Requests: ``{"kind": "escpos" | "image" | "label" | "check", "width_dots": int,
"job_id": str | None}`` with the PDF as bytes (a label adds ``layout``, a
``LabelLayout``, and ``footer``). Answers: ``{"outcome": "ok"}`` with the ESC/POS
bytes, for an image or a label ``{"outcome": "ok", "size": [w, h]}`` with the
packed mode "1" pixels, for a check (the artifact store's: the checks alone, no render)
``{"outcome": "ok"}`` and no bytes; ``rejected`` and ``exhausted`` carry ``reason`` and ``message``,
``value_error`` and ``error`` a ``message``. The first frame the worker sends
is ``{"outcome": "ready"}``, once PDFium and Pillow are loaded and its
address space is capped.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import struct
import sys
from typing import Any, BinaryIO

from badgeline.badge.errors import BadgeRejected, RejectReason
from badgeline.badge.layout import LabelLayout
from badgeline.badge.limits import BadgeLimits

FRAME_HEADER = struct.Struct("!II")
# How the agent starts a worker (then the memory budget and the limits as arguments).
# Not ``-m`` this module: the package imports it first, and runpy would warn about that.
WORKER_COMMAND = (
    "-c",
    "import sys; from badgeline.badge.render_worker import main; sys.exit(main(sys.argv[1:]))",
)

Frame = tuple[dict[str, Any], bytes]


def encode_frame(meta: dict[str, Any], body: bytes = b"") -> bytes:
    encoded = json.dumps(meta, separators=(",", ":")).encode()
    return FRAME_HEADER.pack(len(encoded), len(body)) + encoded + body


def decode_meta(encoded: bytes) -> dict[str, Any]:
    meta = json.loads(encoded)
    if not isinstance(meta, dict):
        raise ValueError("a frame's JSON part must be an object")
    return meta


def _read_exactly(stream: BinaryIO, count: int) -> bytes | None:
    data = stream.read(count)
    if len(data) < count:
        return None  # the agent closed the pipe (or went away): time to exit
    return data


def _read_frame(stream: BinaryIO) -> Frame | None:
    header = _read_exactly(stream, FRAME_HEADER.size)
    if header is None:
        return None
    meta_size, body_size = FRAME_HEADER.unpack(header)
    meta = _read_exactly(stream, meta_size)
    body = _read_exactly(stream, body_size)
    if meta is None or body is None:
        return None
    return decode_meta(meta), body


def serve(requests: BinaryIO, answers: BinaryIO, limits: BadgeLimits) -> None:
    """One request in, one answer out, until the agent closes the pipe."""
    while (request := _read_frame(requests)) is not None:
        meta, pdf_bytes = request
        answer, body = handle(meta, pdf_bytes, limits)
        answers.write(encode_frame(answer, body))
        answers.flush()
        if answer["outcome"] == "exhausted":
            return  # the heap may be in a poor state: let the agent start afresh


def handle(meta: dict[str, Any], pdf_bytes: bytes, limits: BadgeLimits) -> Frame:
    try:
        if meta["kind"] == "check":
            from badgeline.badge.pdfcheck import check_badge_pdf

            check_badge_pdf(pdf_bytes, limits)
            return {"outcome": "ok"}, b""
        # Imported here: a worker that only checks (the artifact store's) never loads Pillow.
        from badgeline.badge import raster

        width_dots, job_id = int(meta["width_dots"]), meta.get("job_id")
        if meta["kind"] == "escpos":
            return {"outcome": "ok"}, raster.badge_to_escpos(pdf_bytes, width_dots, job_id, limits)
        if meta["kind"] == "label":
            layout = LabelLayout.from_json(meta["layout"])
            label = raster.render_label(pdf_bytes, layout, meta.get("footer"), limits)
            return {"outcome": "ok", "size": list(label.size)}, label.tobytes()
        image = raster.render_badge(pdf_bytes, width_dots, limits)
        return {"outcome": "ok", "size": list(image.size)}, image.tobytes()
    except BadgeRejected as rejected:
        return _refusal("rejected", rejected.reason_code, rejected.message)
    except ValueError as error:
        return {"outcome": "value_error", "message": str(error)}, b""
    except MemoryError:
        return _refusal(
            "exhausted",
            RejectReason.TOO_COMPLEX,
            "The badge PDF needed more memory than a badge may use. Simplify it.",
        )
    except Exception as error:  # the worker must answer, whatever PDFium did
        return {"outcome": "error", "message": repr(error)}, b""


def _refusal(outcome: str, reason: RejectReason, message: str) -> Frame:
    return {"outcome": outcome, "reason": reason.value, "message": message}, b""


def cap_own_memory(max_memory_bytes: int) -> None:
    """Load PDFium and Pillow, then cap the address space at what they use plus the budget.

    Pillow only where it is installed: the coordinator's worker only checks
    uploads, and the coordinator side does not install it.
    """
    import resource

    import pypdfium2  # noqa: F401  (load now so the cap measures a warm worker)

    with contextlib.suppress(ImportError):
        import PIL.Image  # noqa: F401

    with open("/proc/self/statm") as statm:
        resting_bytes = int(statm.read().split()[0]) * resource.getpagesize()
    limit = resting_bytes + max_memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # A worker killed by PDFium running out of memory should not leave a core file.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str]) -> int:
    """argv: the memory budget in bytes, then the BadgeLimits as a JSON object."""
    max_memory_bytes, limits = int(argv[0]), BadgeLimits(**json.loads(argv[1]))
    # Ctrl-C in the agent's terminal reaches the whole process group; the agent
    # decides when the worker ends (by closing its stdin), not the keyboard.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Answers get a descriptor of their own; anything a library prints goes to stderr.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    cap_own_memory(max_memory_bytes)
    answers.write(encode_frame({"outcome": "ready"}))
    answers.flush()
    serve(sys.stdin.buffer, answers, limits)
    return 0
