"""A Brother QL's replies on one connection: 32-byte status frames, sorted by type.

Replies to `ESC i S` (status type 00h) answer the status queries; the frames
the printer sends unasked are counted: "printing completed" (01h) once per
page printed, "error occurred" (02h) once per error (status.py). A page's
confirmation waits for one more "printing completed" than had come when the
page was sent (`completed_since`), and an error after it means the printer
cleared it ("if an error occurs, all data read from the computer is
cleared": Raster Command Reference, 5.2 Error flow).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from badgeline.agent.printers.brother_ql.status import (
    ERROR_OCCURRED,
    HEAD,
    PRINTING_COMPLETED,
    REPLY,
    SIZE,
    QlStatus,
    parse_status,
)
from badgeline.agent.printers.replies import Replies

STX = 0x02


@dataclass
class QlReplies(Replies):
    completed: int = 0  # "printing completed" notices on this connection
    errors: int = 0  # "error occurred" notices
    latest: QlStatus | None = None  # the newest frame of any type
    # Another family's answer seen on the line (a Zebra's <STX>… strings).
    foreign: str | None = None
    _fresh: list[bytes] = field(default_factory=list)
    _pending: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> None:
        self._pending += data
        while self._pending:
            start = self._pending.find(HEAD)
            if start < 0:
                if STX in self._pending:
                    self.foreign = "zpl"
                del self._pending[: max(0, len(self._pending) - len(HEAD) + 1)]
                return
            del self._pending[:start]
            if len(self._pending) < SIZE:
                return
            frame = bytes(self._pending[:SIZE])
            del self._pending[:SIZE]
            try:
                status = parse_status(frame)
            except ValueError:
                continue
            self.latest = status
            if status.status_type == PRINTING_COMPLETED:
                self.completed += 1
            elif status.status_type == ERROR_OCCURRED:
                self.errors += 1
                self._fresh.append(frame)  # a status too: the probe reads it
            elif status.status_type == REPLY:
                self._fresh.append(frame)
                self.answered()

    def take_status(self) -> bytes:
        taken = b"".join(self._fresh)
        self._fresh.clear()
        return taken

    def mark(self) -> tuple[int, int]:
        """What a page sent now waits past: the notices counted so far."""
        return self.completed, self.errors
