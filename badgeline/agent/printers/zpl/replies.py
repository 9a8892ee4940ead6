"""A Zebra's replies on one connection: `~HS` and `~HQES` answers, counted in order.

Every answer is framed `<STX>…<ETX>`: a `~HS` answer is three frames (strings
1 to 3), a `~HQES` answer one (status.py). A Zebra answers the queries in the
order it reads them, so the n-th `~HS` answer is the answer to the n-th `~HS`
query, unless the printer dropped some (it does not answer `~HS` in media out,
ribbon out or head open): then an answer is taken for an earlier query than
the one it answers, which only ever makes the agent wait for a later one. A
badge's confirmation needs an answer to a `~HS` sent after the badge
(`done_after`), so an answer to a question asked before it, arriving late,
can never confirm it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from badgeline.agent.printers.foreign import BROTHER_STATUS_HEAD
from badgeline.agent.printers.replies import Replies
from badgeline.agent.printers.zpl.status import (
    HOST_STATUS,
    HostStatus,
    PrinterStatus,
    frames,
    parse_host_status,
    parse_printer_status,
)


@dataclass
class ZplReplies(Replies):
    host_status_asked: int = 0  # `~HS` queries sent on this connection
    host_status_answers: int = 0  # complete `~HS` answers received
    # The newest `~HS` answer and its number; the newest `~HQES` answer.
    host_status: HostStatus | None = None
    printer_status: PrinterStatus | None = None
    # Another family's status seen on the line (a Brother QL's 32-byte status).
    foreign: str | None = None
    _fresh: list[bytes] = field(default_factory=list)  # answers since take_status, raw
    _strings: list[bytes] = field(default_factory=list)  # `~HS` strings of an answer so far
    _pending: bytes = b""

    def asked(self, query: bytes = b"") -> None:
        super().asked(query)
        if query == HOST_STATUS:
            self.host_status_asked += 1

    def feed(self, data: bytes) -> None:
        if BROTHER_STATUS_HEAD in data:
            self.foreign = "brother_ql"
        found, self._pending = frames(self._pending + data)
        for frame in found:
            self._frame(frame)

    def _frame(self, frame: bytes) -> None:
        if b"ERRORS" in frame:
            try:
                self.printer_status = parse_printer_status(frame)
            except ValueError:
                return
            self._answered(b"\x02" + frame + b"\x03")
            return
        fields = frame.count(b",") + 1
        if fields == 12:
            self._strings = [frame]  # string 1 starts an answer
        elif fields == 11 and len(self._strings) == 1:
            self._strings.append(frame)
        elif fields == 2 and len(self._strings) == 2:
            try:
                status = parse_host_status(*self._strings)
            except ValueError:
                self._strings = []
                return
            raw = b"".join(b"\x02" + part + b"\x03" for part in (*self._strings, frame))
            self._strings = []
            self.host_status = status
            self.host_status_answers += 1
            self._answered(raw)
        # anything else is noise: ignored

    def _answered(self, raw: bytes) -> None:
        self._fresh.append(raw)
        self.answered()

    def take_status(self) -> bytes:
        taken = b"".join(self._fresh)
        self._fresh.clear()
        return taken

    def done_after(self, mark: int) -> bool:
        """Whether a `~HS` asked after the first `mark` ones said every label is out."""
        status = self.host_status
        return self.host_status_answers > mark and status is not None and status.idle
