"""When is a Brother QL's label out? When the printer itself says "printing completed".

A QL tells its host how a page goes, unasked (Raster Command Reference, 5.1
Normal flow): "phase change: printing", then "printing completed" (status
type 01h) once the page is printed, then "phase change: waiting to receive".
That notice, arriving after the page was sent, is the confirmation
`print_completed`. An "error occurred" notice instead (02h) means the
printer cleared everything it had read (5.2 Error flow): `FAULT`, the badge
`uncertain`, as on an Epson.

While it prints the QL says nothing; a printer quiet for `timeout_s` since
it took the last byte is asked `ESC i S`, and one that answers that neither
is `SILENT`. Over TCP port 9100 a QL answers nothing at all (its network flow,
5.9, has no status): such a printer needs `print_confirmation = "sent"`, which
the agent's settings enforce.
"""

from __future__ import annotations

from badgeline.agent.printers.brother_ql.replies import QlReplies
from badgeline.agent.printers.brother_ql.status import STATUS_REQUEST, parse_status
from badgeline.agent.printers.completion import Completion, Outcome
from badgeline.agent.printers.link import LinkIo


def poll_page_printed(io: LinkIo, mark: tuple[int, int], pause_s: float) -> Completion | None:
    """One round of the wait for the page sent when the notices stood at `mark`."""
    replies = io.replies
    assert isinstance(replies, QlReplies)  # a Brother QL link's (factory.py)
    completion = _outcome(replies, mark)
    if completion is not None:
        return completion
    io.wait(pause_s)
    replies.feed(io.receive())
    if (completion := _outcome(replies, mark)) is not None:
        return completion
    if fresh := replies.take_status():
        status = parse_status(fresh[-32:])
        if status.errors:
            return Completion(Outcome.FAULT, "the printer reported an error before the label"
                              " was out")  # fmt: skip
        return None  # answered: still printing
    quiet_s = io.quiet_s()
    if io.busy() or quiet_s < io.timeout_s:
        return None  # printing, or taken our bytes too recently to say
    if not replies.unanswered:
        io.write(STATUS_REQUEST)
        replies.asked(STATUS_REQUEST)
        return None
    if replies.waiting_s() < io.timeout_s:
        return None
    replies.forget_questions()
    return Completion(Outcome.SILENT, "the printer stopped answering before the label was out")


def _outcome(replies: QlReplies, mark: tuple[int, int]) -> Completion | None:
    completed, errors = mark
    # Completed first: an error after the page was out is about no page of ours
    # (one page in flight at a time), while one before it cleared the page.
    if replies.completed > completed:
        return Completion(Outcome.PRINTED, "printing completed")
    if replies.errors > errors:
        return Completion(Outcome.FAULT, "the printer reported an error before the label was out")
    return None
