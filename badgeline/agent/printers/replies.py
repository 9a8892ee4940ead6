"""Telling a printer's replies apart: GS ( H process ID responses and DLE EOT status bytes.

Replies share one byte stream, so a link keeps one ``ReplySorter`` for as long as
it is connected: a process ID response read by any operation (a status probe's
drain, another badge's wait) is kept until the wait for that ID claims it. With
badges pipelined, the response for one badge may arrive while the agent is busy
with another; dropping it would leave that badge unconfirmed.

A process ID response starts with 0x37, which is never a status byte (status bytes
have bit 0 clear), and has a fixed length, so status bytes and responses can be told
apart even though the ID's own bytes may look like status bytes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from badgeline.agent.printers.foreign import TAIL_BYTES, foreign_family
from badgeline.agent.printers.realtime_status import is_status_byte

RESPONSE_HEADER = 0x37
RESPONSE_IDENTIFIER = 0x22
RESPONSE_SIZE = 7  # header, identifier, d1..d4, NUL
# Responses nobody claims (a wait abandoned, an earlier agent run's request) are kept
# only this many at a time.
MAX_UNCLAIMED = 32


@dataclass
class Replies:
    """What every printer family's reply reader keeps: its replies, and how many of the
    status queries sent are still unanswered (a busy printer answers them late, in order).

    Each family reads its own replies (ESC/POS: `ReplySorter` below; ZPL and Brother QL:
    their packages' `replies` modules); the link feeds it whatever the printer sends.
    """

    # Status queries sent that no reply has answered yet, and when the oldest of
    # them went (time.monotonic): a printer busy with our bytes answers them late,
    # all in order, and a poll need not add to the pile.
    unanswered: int = 0
    asked_at: float | None = None

    def asked(self, query: bytes = b"") -> None:
        """A status query (`query`, for families that count them by kind) went out."""
        self.unanswered += 1
        if self.asked_at is None:
            self.asked_at = time.monotonic()

    def forget_questions(self) -> None:
        """The printer will not answer what it was asked (it is gone): ask afresh."""
        self.unanswered, self.asked_at = 0, None

    def waiting_s(self) -> float:
        """How long the oldest unanswered status query has waited (0: none waits)."""
        return 0.0 if self.asked_at is None else time.monotonic() - self.asked_at

    def answered(self) -> None:
        self.unanswered = max(0, self.unanswered - 1)
        # The next unanswered query (if any) counts from now: it was asked no earlier.
        self.asked_at = time.monotonic() if self.unanswered else None

    def feed(self, data: bytes) -> None:
        raise NotImplementedError

    def take_status(self) -> bytes:
        """The status replies read so far (as the family frames them); then forgotten."""
        raise NotImplementedError


@dataclass
class ReplySorter(Replies):
    """Splits what an ESC/POS printer sends into process ID responses and status bytes."""

    process_ids: list[bytes] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    # Another family's reply seen on the line (a Zebra's ~HS answer, a Brother QL's
    # status): the printer is not an ESC/POS one, whatever bytes of it pass as status.
    foreign: str | None = None
    _pending: bytearray = field(default_factory=bytearray)
    _tail: bytes = b""

    def feed(self, data: bytes) -> None:
        seen = self._tail + data
        self.foreign = foreign_family(seen) or self.foreign
        self._tail = seen[-TAIL_BYTES:]
        self._pending += data
        while self._pending:
            if self._pending[0] != RESPONSE_HEADER:
                byte = self._pending.pop(0)
                if is_status_byte(byte):
                    self.status.append(byte)
                    self.answered()
                continue  # anything else is noise: ignored, like the probe does
            if len(self._pending) < RESPONSE_SIZE:
                return  # the rest of the response is still on its way
            frame = bytes(self._pending[:RESPONSE_SIZE])
            if frame[1] == RESPONSE_IDENTIFIER and frame[-1] == 0:
                self.process_ids.append(frame[2:6])
                del self._pending[:RESPONSE_SIZE]
            else:
                del self._pending[:1]  # not a response after all: resynchronise

    def claim(self, process_id: bytes) -> bool:
        """Whether the response for `process_id` has arrived; it is then taken out."""
        if process_id not in self.process_ids:
            del self.process_ids[:-MAX_UNCLAIMED]
            return False
        self.process_ids.remove(process_id)
        return True

    def take_status(self) -> bytes:
        """The status bytes read so far (oldest first); they are then forgotten."""
        taken = bytes(self.status)
        self.status.clear()
        return taken
