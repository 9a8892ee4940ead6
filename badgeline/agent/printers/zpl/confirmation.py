"""When is a Zebra's label out? When `~HS`, asked after it, shows nothing left to print.

A Zebra sends nothing unasked. `~HS` (status.py) is answered as the printer
reads it, and counts what it still has to do: formats in the receive buffer
(eee), a format half received (h), labels of the batch still to print
(uuuuuuuu). Asked after the badge's `^XZ`, an answer with all three at 0 and
no paper out, pause, head open or ribbon out says the badge's label has been
printed: the printer's own word, the confirmation `host_status`.

Unlike an Epson, a Zebra keeps its labels through a paper out, a ribbon out,
an open head or a pause and prints them once the condition clears, and
`^JZY` (encoder.py) prints again a label one of them interrupted. So a fault
is no outcome here: the badge is held, and the wait goes on until the printer
says it is out, or `print_confirm_timeout_s` runs out (the print loop), or the
printer stops answering altogether (`SILENT`: switched off, which loses its
buffer). Every outcome but PRINTED leaves the badge `uncertain`.

`~HS` goes unanswered in media out, ribbon out and head open (status.py); a
silent `~HS` is followed by one `~HQES`, and only a printer that answers
neither is silent.

With several labels in flight (`print_pipeline_depth`), the next one waits in
the printer's buffer while one prints, so the printer does not idle between
them. `~HS` cannot tell the labels apart, but it need not: an answer showing
nothing left, to a question asked after the last label sent, says every
label before it is out. So the labels in flight are confirmed together, once
the printer has printed them all; until then every answer counts at least the
last one as waiting or printing.
"""

from __future__ import annotations

import time

from badgeline.agent.printers.completion import Completion, Outcome
from badgeline.agent.printers.link import LinkIo
from badgeline.agent.printers.zpl.replies import ZplReplies
from badgeline.agent.printers.zpl.status import HOST_STATUS, PRINTER_STATUS


def poll_label_out(io: LinkIo, mark: int, pause_s: float) -> Completion | None:
    """One round of the wait for the labels sent before `~HS` query number `mark` + 1;
    None: not yet (printing, held by a fault, or the answer still on its way)."""
    replies = io.replies
    assert isinstance(replies, ZplReplies)  # a ZPL link's (factory.py)
    if replies.done_after(mark):
        return Completion(Outcome.PRINTED, "~HS: no label left to print")
    started = time.monotonic()
    if not replies.unanswered:
        replies.take_status()
        io.write(HOST_STATUS)
        replies.asked(HOST_STATUS)
    io.wait(pause_s)
    replies.feed(io.receive())
    if replies.done_after(mark):
        return Completion(Outcome.PRINTED, "~HS: no label left to print")
    if replies.take_status():
        # Still printing, or held until a fault clears. A Zebra answers ~HS at once,
        # even mid-label: the poll waits out its pause all the same, so the next one
        # asks no sooner (else the agent would ask as fast as the printer answers).
        # The printer sends nothing unasked, so nothing is missed meanwhile.
        if (rest := pause_s - (time.monotonic() - started)) > 0:
            time.sleep(rest)
        return None
    if io.timeout_s > min(replies.waiting_s(), io.quiet_s()) or io.busy():
        return None  # asked, or taken by the printer, too recently; or busy
    # No answer to ~HS: a Zebra in media out, ribbon out or head open keeps quiet.
    replies.forget_questions()
    io.write(PRINTER_STATUS)
    replies.asked(PRINTER_STATUS)
    answered, deadline = False, time.monotonic() + io.timeout_s
    while not answered and (left := deadline - time.monotonic()) > 0:
        io.wait(left)
        replies.feed(io.receive())
        answered = bool(replies.take_status())
    replies.forget_questions()
    if answered:
        return None  # it answers ~HQES: a fault holds the label
    return Completion(Outcome.SILENT, "the printer stopped answering before the label was out")
