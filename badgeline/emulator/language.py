"""The one seam between printer languages: what a language provides, the rest shared.

The emulator's port, print head, receive buffer, faults, slow mode and
`/printed` record are the same for every language (port.py, printhead.py,
state.py). A language (a `Family`) supplies only what differs between
printer makers:

- a decoder per connection: bytes in, split anywhere, events out (the cut
  pages or labels to print, and the real-time queries it answers);
- its answers to those queries, from the printer's condition and the head;
- the notices a printer sends by itself as a page goes through the head
  (a Brother QL's "printing completed"), through a `PageWatcher`;
- which faults it can have, and through which it keeps its buffer;
- the media it can load.

Families: escpos.py (Epson ESC/POS), zpl/ (Zebra ZPL II), brother_ql/
(Brother QL raster); families.py picks one by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from badgeline.emulator.label import Label
from badgeline.emulator.media import Media
from badgeline.emulator.page import Page
from badgeline.emulator.state import Fault, PrinterCondition

# A page the head prints: an ESC/POS page or a finished label.
Sheet = Page | Label
# Sends bytes back on the connection a page or a query came from.
Reply = Callable[[bytes], None]


class Language(StrEnum):
    ESCPOS = "escpos"
    ZPL = "zpl"
    BROTHER_QL = "brother-ql"


class Query:
    """An event that asks for an answer as soon as the printer reads it (ESC/POS DLE
    EOT, ZPL ~HS and ~HQES, Brother ESC i S)."""


@dataclass(frozen=True)
class LabelCut:
    """A label format or raster page ended: `copies` labels to print."""

    label: Label
    copies: int = 1


@dataclass(frozen=True)
class HeadView:
    """What a status answer may report of the print head and its buffer."""

    formats_waiting: int  # cut pages or formats received and not started
    labels_remaining: int  # labels of the batch on the head not yet out
    buffer_full: bool
    printing: bool


class Decoder(Protocol):
    unknown_commands: int
    skipped_symbols: int

    @property
    def has_pending_content(self) -> bool:
        """Content has arrived that no cut (or end of format) has ended yet."""
        ...

    def feed(self, data: bytes) -> Sequence[object]: ...


class PageWatcher(Protocol):
    """What a printer tells its host by itself as a page goes through the head."""

    def started(self, page: Sheet) -> None: ...

    def printed(self, page: Sheet) -> None: ...

    def lost(self, page: Sheet) -> None: ...


class Family(Protocol):
    language: Language
    model: str
    faults: frozenset[Fault]
    holds: frozenset[Fault]

    def default_media(self, dpi: int | None = None) -> Media: ...

    def check_media(self, media: Media) -> Media:
        """The media if this printer can load it, else ValueError saying what it takes."""
        ...

    def decoder(self, condition: PrinterCondition) -> Decoder: ...

    def answer(
        self, query: Query, condition: PrinterCondition, head: HeadView, decoder: Decoder
    ) -> bytes | None:
        """The reply to a real-time query, or None when the printer stays silent."""
        ...

    def watcher(
        self, reply: Reply, decoder: Decoder, condition: PrinterCondition
    ) -> PageWatcher | None: ...


def fault_error(family: Family, fault: Fault) -> str | None:
    """Why `family` cannot have `fault`, or None when it can."""
    if fault in family.faults:
        return None
    known = ", ".join(sorted(family.faults))
    return f"a {family.model} has no fault {fault}; its faults are {known}"
