"""The printer side of DLE EOT and GS ( H, shared by the test printers (TCP, pty, fake USB).

A real printer scans its input for ``10 04 n`` and answers each with one
status byte, even inside other data; a query may arrive split across reads.
These printers print instantly, so a ``GS ( H`` process ID request (fn 48) is
answered as soon as it arrives, with ``37 22 d1 d2 d3 d4 00``.
"""

from __future__ import annotations

HEALTHY = 0x12  # what a printer with nothing to report answers to every n
DLE_EOT = b"\x10\x04"
PROCESS_ID_REQUEST = b"\x1d\x28\x48\x06\x00\x30\x30"  # then d1..d4
_PROCESS_ID_SIZE = len(PROCESS_ID_REQUEST) + 4


def healthy_status() -> dict[int, int]:
    return dict.fromkeys((1, 2, 3, 4), HEALTHY)


class StatusResponder:
    """Feed it the bytes a printer receives; it returns the replies a printer would send.

    ``status[n]`` is the reply to ``DLE EOT n``; an n missing from ``status``
    gets no reply, and ``answering = False`` silences all of them (process ID
    responses too). ``process_id_support = False`` is a printer that ignores GS ( H.
    """

    def __init__(self) -> None:
        self.status = healthy_status()
        self.answering = True
        self.process_id_support = True
        self.queries: list[int] = []
        self.process_ids: list[bytes] = []
        self._tail = b""

    def feed(self, data: bytes) -> bytes:
        stream = self._tail + data
        self._tail = b""
        replies = bytearray()
        position = 0
        while (start := _next_command(stream, position)) >= 0:
            rest = stream[start:]
            if rest.startswith(DLE_EOT[:1]):
                if len(rest) < 3:
                    if DLE_EOT.startswith(rest):
                        self._tail = rest  # a query that the next read completes
                        break
                    position = start + 1
                    continue
                if rest[1:2] != DLE_EOT[1:]:
                    position = start + 1
                    continue
                self._status_query(rest[2], replies)
                position = start + 3
            elif len(rest) < _PROCESS_ID_SIZE and PROCESS_ID_REQUEST.startswith(
                rest[: len(PROCESS_ID_REQUEST)]
            ):
                self._tail = rest
                break
            elif rest.startswith(PROCESS_ID_REQUEST):
                self._process_id(rest[len(PROCESS_ID_REQUEST) : _PROCESS_ID_SIZE], replies)
                position = start + _PROCESS_ID_SIZE
            else:
                position = start + 1
        return bytes(replies)

    def _status_query(self, n: int, replies: bytearray) -> None:
        self.queries.append(n)
        if self.answering and n in self.status:
            replies.append(self.status[n])

    def _process_id(self, process_id: bytes, replies: bytearray) -> None:
        self.process_ids.append(process_id)
        if self.answering and self.process_id_support:
            replies += b"\x37\x22" + process_id + b"\x00"


def _next_command(stream: bytes, position: int) -> int:
    """Where the next DLE or GS byte is, from `position`; -1 if none."""
    found = [i for i in (stream.find(b"\x10", position), stream.find(b"\x1d", position)) if i >= 0]
    return min(found, default=-1)
