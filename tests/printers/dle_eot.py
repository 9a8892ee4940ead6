"""The printer side of DLE EOT, shared by the test printers (TCP, pty, fake USB).

A real printer scans its input for ``10 04 n`` and answers each with one
status byte, even inside other data; a query may arrive split across reads.
"""

from __future__ import annotations

HEALTHY = 0x12  # what a printer with nothing to report answers to every n
DLE_EOT = b"\x10\x04"


def healthy_status() -> dict[int, int]:
    return dict.fromkeys((1, 2, 3, 4), HEALTHY)


class StatusResponder:
    """Feed it the bytes a printer receives; it returns the replies a printer would send.

    ``status[n]`` is the reply to ``DLE EOT n``; an n missing from ``status``
    gets no reply, and ``answering = False`` silences all of them.
    """

    def __init__(self) -> None:
        self.status = healthy_status()
        self.answering = True
        self.queries: list[int] = []
        self._tail = b""

    def feed(self, data: bytes) -> bytes:
        stream = self._tail + data
        replies = bytearray()
        position = 0
        while True:
            start = stream.find(DLE_EOT, position)
            if start < 0:
                # Keep a trailing DLE: it may start a query that the next read completes.
                self._tail = stream[-1:] if stream.endswith(DLE_EOT[:1]) else b""
                return bytes(replies)
            if start + 2 >= len(stream):
                self._tail = stream[start:]
                return bytes(replies)
            n = stream[start + 2]
            self.queries.append(n)
            if self.answering and n in self.status:
                replies.append(self.status[n])
            position = start + 3
