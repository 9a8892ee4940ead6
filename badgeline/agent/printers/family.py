"""Printer families: what the agent does differently for the language its printer speaks.

One small interface, `PrinterFamily`, which the link (its replies), the probe
(its status), the badge preparation (its label and encoding) and the print
loop (its confirmation) use; the print loop is one for every family. One
implementation per language (`[printer] language`):

- `escpos`: Epson TM receipt printers and their clones (this module), the
  badge rendered at the paper's width and sent as GS v 0 raster, confirmed
  by GS ( H (completion.py), status by DLE EOT (realtime_status.py);
- `zpl`: Zebra ZD421/ZD621/ZD411 label printers (zpl/);
- `brother_ql`: Brother QL-820NWB/QL-1110NWB label printers (brother_ql/).

Every family rides every cable (TCP 9100, USB, a device node): a link moves
bytes, the family reads them. The one cable a family cannot use fully is a
Brother QL's TCP port, which answers nothing (brother_ql/confirmation.py):
the settings refuse it unless the printer is confirmed by `sent`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from badgeline.badge.layout import LabelLayout
from badgeline.protocol.agent_models import PrinterHealthReport
from badgeline.protocol.states import Confirmation, PrinterLanguage

if TYPE_CHECKING:
    from badgeline.agent.printers.completion import Completion
    from badgeline.agent.printers.link import LinkIo, PrinterLink
    from badgeline.agent.printers.replies import Replies

# What the wait for one badge's confirmation looks for: an ESC/POS process ID,
# a count of a label printer's answers or notices when the badge went.
Mark = Any


class LabelLengthUnknown(ValueError):
    """No label length configured, and the printer has not said it yet."""


class PrinterFamily(ABC):
    """One printer language, with the printer's media as configured (and learned)."""

    language: ClassVar[PrinterLanguage]
    # The printer's own word that a badge is out: what "auto" confirms by.
    own_confirmation: ClassVar[Confirmation]
    # Blocking reply waits one probe may make at worst (for its backstop).
    probe_steps: ClassVar[int] = 3
    # Reply bytes a USB link reads at once (None: the link's own).
    reply_chunk: ClassVar[int | None] = None
    # The longest pause between two polls of a badge's confirmation (None: the print
    # loop's own). A printer that idles until its badge is confirmed wants it short.
    longest_confirm_poll_s: ClassVar[float | None] = None

    @property
    def confirmations(self) -> frozenset[str]:
        """The `print_confirmation` values this family takes."""
        return frozenset({"auto", str(self.own_confirmation), "status", "sent"})

    def confirmation_for(self, configured: str) -> str:
        """What `print_confirmation` means for this printer ("auto": its own word)."""
        return str(self.own_confirmation) if configured == "auto" else configured

    @property
    def model(self) -> str | None:
        return None

    def describe(self) -> str:
        """The printer and its media, for the start-up log and the mDNS advert."""
        return self.model or "unknown"

    @abstractmethod
    def new_replies(self) -> Replies:
        """A reader of this printer's replies, for a new connection."""

    @abstractmethod
    def read_health(self, link: PrinterLink) -> PrinterHealthReport:
        """Ask the printer its status and map it. Blocking; raises PrinterLinkError."""

    def layout(self, footer: bool) -> LabelLayout | None:
        """The label a badge is rendered on (None: the ESC/POS paper pipeline)."""
        return None

    def encode(self, packed: bytes, size: tuple[int, int], footer: str | None) -> bytes:
        """The printer's bytes for a rendered label (packed mode "1", 1 = white)."""
        raise NotImplementedError(f"{self.language} badges are encoded by the render worker")

    def mark(self, replies: Replies) -> Mark:
        """Taken (under the link's lock) just before a badge is written."""
        raise NotImplementedError

    def poll(self, io: LinkIo, mark: Mark, pause_s: float) -> Completion | None:
        """One round of the wait for a badge's confirmation; None: not yet."""
        raise NotImplementedError


class EscposFamily(PrinterFamily):
    """ESC/POS: DLE EOT status, GS ( H confirmation, its own paper pipeline."""

    language = PrinterLanguage.ESCPOS
    own_confirmation = Confirmation.PROCESS_ID
    probe_steps = 1 + 3 * 4  # open, then per DLE EOT query a drain, a send and a wait

    def __init__(self, profile: str | None = None) -> None:
        self.profile = profile

    @property
    def model(self) -> str | None:
        return self.profile

    @property
    def confirmations(self) -> frozenset[str]:
        return frozenset({"auto", "process_id", "status", "sent"})

    def confirmation_for(self, configured: str) -> str:
        return configured  # "auto" learns from the printer (loops/confirmation.py)

    def new_replies(self) -> Replies:
        from badgeline.agent.printers.replies import ReplySorter

        return ReplySorter()

    def read_health(self, link: PrinterLink) -> PrinterHealthReport:
        from badgeline.agent.printers.realtime_status import escpos_health

        return escpos_health(link)


def family_for(language: str, *, model: str | None = None, **media: Any) -> PrinterFamily:
    """The family of a `[printer]` table's language, with its media; ValueError when the
    media is not one the model takes (naming the setting)."""
    if language == PrinterLanguage.ZPL:
        from badgeline.agent.printers.zpl import ZplFamily

        return ZplFamily.configured(model=model, **media)
    if language == PrinterLanguage.BROTHER_QL:
        from badgeline.agent.printers.brother_ql import BrotherQlFamily

        return BrotherQlFamily.configured(model=model, **media)
    return EscposFamily(model)
