"""The render worker: same output as in-process, and a runaway PDF cannot take the agent down."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import zlib
from collections.abc import Iterator

import pytest

from badgeline import samples
from badgeline.badge import (
    WIDTH_DOTS_58MM,
    WIDTH_DOTS_80MM,
    BadgeRejected,
    BadgeRenderWorker,
    RejectReason,
    SandboxLimits,
    badge_to_escpos,
    render_badge,
)


def form_drawn_many_times(lines_in_form: int, times_drawn: int) -> bytes:
    """A tiny PDF whose page draws one form XObject over and over: PDFium parses it each time."""
    form = zlib.compress(b"0 0 m 1 1 l S\n" * lines_in_form)
    page = zlib.compress(b"/Line Do\n" * times_drawn)
    return samples.hand_built_pdf(
        page,
        b"/Filter /FlateDecode",
        page_resources=b"<< /XObject << /Line 5 0 R >> >>",
        extra_objects=[
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 226 283] /Filter /FlateDecode "
            b"/Length %d >>\nstream\n%s\nendstream" % (len(form), form)
        ],
    )


@pytest.fixture(scope="module")
def worker() -> Iterator[BadgeRenderWorker]:
    with BadgeRenderWorker() as started:
        yield started


def test_the_worker_prints_what_the_agent_would_print_in_process(
    worker: BadgeRenderWorker, good_badge: bytes
) -> None:
    # GIVEN a good badge WHEN converted in the worker and in-process THEN the bytes are equal
    assert worker.badge_to_escpos(good_badge, WIDTH_DOTS_80MM, "9") == badge_to_escpos(
        good_badge, WIDTH_DOTS_80MM, "9"
    )


def test_the_worker_renders_the_same_image(worker: BadgeRenderWorker, other_badge: bytes) -> None:
    image = worker.render_badge(other_badge, WIDTH_DOTS_58MM)
    assert image.mode == "1"
    assert image.tobytes() == render_badge(other_badge, WIDTH_DOTS_58MM).tobytes()


def test_a_refusal_in_the_worker_keeps_its_reason(worker: BadgeRenderWorker) -> None:
    with pytest.raises(BadgeRejected) as refused:
        worker.badge_to_escpos(samples.core_font_badge_pdf(), WIDTH_DOTS_80MM)
    assert refused.value.reason_code is RejectReason.FONT_NOT_EMBEDDED
    assert "Helvetica" in refused.value.message


def test_a_bad_width_is_still_a_value_error(worker: BadgeRenderWorker, good_badge: bytes) -> None:
    with pytest.raises(ValueError, match="width"):
        worker.badge_to_escpos(good_badge, 0)


def test_a_pdf_that_multiplies_its_work_is_stopped_at_the_memory_cap(good_badge: bytes) -> None:
    # GIVEN a worker allowed 64 MiB, and a 1 KB PDF that draws a 1,000-line form
    # 1,000 times (PDFium needs ~270 MB to load that page)
    bomb = form_drawn_many_times(lines_in_form=1_000, times_drawn=1_000)
    assert len(bomb) < 2_000
    with BadgeRenderWorker(sandbox=SandboxLimits(max_memory_bytes=64 * 1024 * 1024)) as worker:
        # WHEN it is converted THEN it is refused as too complex
        with pytest.raises(BadgeRejected) as refused:
            worker.badge_to_escpos(bomb, WIDTH_DOTS_80MM)
        assert refused.value.reason_code is RejectReason.TOO_COMPLEX
        # AND the next badge prints, from a fresh worker
        assert worker.badge_to_escpos(good_badge, WIDTH_DOTS_80MM).endswith(b"\x1dVB\x00")


def test_a_badge_past_the_deadline_is_abandoned_and_the_worker_replaced(good_badge: bytes) -> None:
    # GIVEN a worker with no time at all for a badge
    with BadgeRenderWorker(sandbox=SandboxLimits(timeout_seconds=0)) as worker:
        # WHEN a badge is converted THEN it is refused as too complex
        with pytest.raises(BadgeRejected) as refused:
            worker.badge_to_escpos(good_badge, WIDTH_DOTS_80MM)
        assert refused.value.reason_code is RejectReason.TOO_COMPLEX
        assert "took more than" in refused.value.message
    # AND a worker with time prints it
    with BadgeRenderWorker() as worker:
        assert worker.badge_to_escpos(good_badge, WIDTH_DOTS_80MM)


def test_a_worker_killed_from_outside_is_replaced_on_the_next_badge(good_badge: bytes) -> None:
    # GIVEN a worker that has printed a badge
    with BadgeRenderWorker() as worker:
        first = worker.badge_to_escpos(good_badge, WIDTH_DOTS_80MM)
        pid = worker.pid
        assert pid is not None
        # WHEN something (the OOM killer, a person) kills it
        os.kill(pid, signal.SIGKILL)
        # THEN the next badge is refused or printed, never an exception that is not
        # BadgeRejected, and the one after prints the same bytes from a new worker
        with contextlib.suppress(BadgeRejected):
            worker.badge_to_escpos(good_badge, WIDTH_DOTS_80MM)
        assert worker.badge_to_escpos(good_badge, WIDTH_DOTS_80MM) == first
        assert worker.pid not in (None, pid)


WORKER_WITHOUT_MULTIPROCESSING = """
import sys
from badgeline.badge import BadgeRenderWorker
with BadgeRenderWorker() as worker:
    worker.badge_to_escpos(sys.stdin.buffer.read(), 576)
print("multiprocessing" in sys.modules, "pypdfium2" in sys.modules, "PIL" in sys.modules)
"""


def test_the_worker_is_a_plain_subprocess_and_pdfium_stays_out_of_the_agent(
    good_badge: bytes,
) -> None:
    # GIVEN a fresh interpreter WHEN it renders a badge through the worker
    command = [sys.executable, "-c", WORKER_WITHOUT_MULTIPROCESSING]
    result = subprocess.run(command, input=good_badge, capture_output=True, timeout=120, check=True)
    # THEN neither multiprocessing (and its resource tracker) nor PDFium or Pillow was
    # loaded in the calling process
    assert result.stdout.split() == [b"False", b"False", b"False"]
