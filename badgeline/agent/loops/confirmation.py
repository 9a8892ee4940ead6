"""How a printer's badges are confirmed printed: as configured, or learned ("auto").

`print_confirmation` names the evidence the print loop waits for: the printer's
own word that the badge is out (an ESC/POS printer's answer to a GS ( H process
ID request sent after the badge, `process_id`; a Zebra's `~HS` showing no label
left, `host_status`; a Brother QL's "printing completed", `print_completed`), a
healthy status right after it (`status`), or the printer having taken every
byte (`sent`, for write-only printers). A label printer's `auto` is its own
word (its family says which, printers/family.py). An ESC/POS printer's `auto`
is learned from the first badge: an answer proves GS ( H; a printer that
stays online through a whole timeout without answering, and then leaves a bare
request unanswered too, does not know it.
"""

from __future__ import annotations

import logging

from badgeline.agent.printers import AsyncPrinterLink
from badgeline.agent.printers.completion import Completion, Outcome
from badgeline.log import log_event
from badgeline.protocol.states import Confirmation

# How long an idle printer that knows GS ( H may take to answer a bare request
# (see `learn`); one that does not know it costs this once per start.
SUPPORT_CHECK_S = 2.0
# The confirmations that wait for the printer's own word that a badge is out.
_PRINTERS_WORD = frozenset({"process_id", "host_status", "print_completed"})


class ConfirmationPolicy:
    """The confirmation configured for one printer, and what "auto" has learned."""

    def __init__(self, configured: str, link: AsyncPrinterLink, printer_id: str) -> None:
        self.configured = configured
        self.link = link
        self.printer_id = printer_id
        # With "auto": whether the printer answers GS ( H, once a badge has shown it.
        self.process_id_support: bool | None = None

    def by_printer(self) -> bool:
        """Whether the next badge waits for the printer's own word (a process ID, a
        label printer's status or notice) that it is out."""
        if self.configured == "auto":
            return self.process_id_support is not False
        return self.configured in _PRINTERS_WORD

    def pipelines(self) -> bool:
        """Whether badges may be pipelined: the printer is known to answer GS ( H, which
        tells badges apart, or is a Zebra, whose `~HS` showing nothing left, asked after
        the last label sent, says every label before it is out. A Brother QL's
        "printing completed" names no page: one label at a time."""
        return self.configured in ("process_id", "host_status") or bool(self.process_id_support)

    def in_use(self) -> Confirmation | None:
        """How badges are confirmed now (None: "auto", not learned from a badge yet)."""
        if self.configured == "sent":
            return Confirmation.SENT
        if self.configured in (Confirmation.HOST_STATUS, Confirmation.PRINT_COMPLETED):
            return Confirmation(self.configured)
        if self.pipelines():
            return Confirmation.PROCESS_ID
        if self.configured == "status" or self.process_id_support is False:
            return Confirmation.STATUS
        return None

    async def learn(self, completion: Completion) -> None:
        """With "auto": learn from a badge's completion whether GS ( H works.

        One lost answer proves nothing (a blink offline loses the request):
        trusting status after it would call badges still in the printer's
        buffer printed. So a timeout is checked with a bare request first.
        """
        if self.configured != "auto" or self.process_id_support is not None:
            return
        supported: bool | None = None
        if completion.printed:
            supported = True
        elif completion.outcome is Outcome.TIMED_OUT:
            # None: the printer cannot tell now (offline): learn from a later badge.
            supported = await self.link.answers_process_id(SUPPORT_CHECK_S)
        if supported:
            self.process_id_support = True
            log_event("print_confirmation", printer_id=self.printer_id, by="process_id")
        elif supported is False:
            self.process_id_support = False
            log_event("print_confirmation", logging.WARNING, printer_id=self.printer_id,
                      by="status", reason="the printer does not answer GS ( H")  # fmt: skip

    def doubt(self, completion: Completion) -> str:
        """Why a badge that was not confirmed may not have come out."""
        if completion.outcome is Outcome.TIMED_OUT and self.configured in ("auto", "process_id"):
            hint = 'a printer without GS ( H needs print_confirmation = "status"'
            log_event("print_confirmation_timed_out", logging.WARNING,
                      printer_id=self.printer_id, detail=completion.detail, hint=hint)  # fmt: skip
        return f"not confirmed printed: {completion.detail}"
