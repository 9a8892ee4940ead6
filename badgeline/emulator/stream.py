"""The decoder's byte buffer and the states that consume command data as it streams in.

A data-carrying command is read by the length its header announces: its
data is skipped, or collected up to a bound, across as many TCP reads as it
takes, so a header claiming gigabytes costs no memory and a command split
anywhere decodes as one read whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from badgeline.emulator.page import PageBuilder

# A handler's answer when the command is not all in the buffer yet.
NEED_MORE = 0


@dataclass
class _Collecting:
    missing: int
    data: bytearray
    done: Callable[[bytes], None]
    is_content: bool  # printed content (an image), not a setting or symbol data


class StreamDecoder:
    """The buffer, the streaming states and the helpers every command handler uses."""

    def __init__(self) -> None:
        self.unknown_commands = 0
        self._buffer = bytearray()
        self._builder = PageBuilder()
        self._skip_bytes = 0
        self._skip_until_nul = 0
        self._collecting: _Collecting | None = None

    @property
    def has_pending_content(self) -> bool:
        """Content has arrived that no cut has ended yet."""
        collecting = self._collecting
        return self._builder.has_pending_content or (
            collecting is not None and collecting.is_content
        )

    def _stream(self, pos: int) -> int | None:
        """Consume data of a command in progress; None when no command is."""
        if self._skip_bytes:
            dropped = min(self._skip_bytes, self._available(pos))
            self._skip_bytes -= dropped
            return dropped
        if self._skip_until_nul:
            return self._drop_until_nul(pos)
        if self._collecting is not None:
            return self._take_collected(pos)
        return None

    def _available(self, pos: int) -> int:
        return len(self._buffer) - pos

    def _fixed(self, pos: int, params: int) -> int:
        """Bytes of a prefix + command + `params` command, or NEED_MORE."""
        size = 2 + params
        return size if self._available(pos) >= size else NEED_MORE

    def _unknown(self, size: int) -> int:
        self.unknown_commands += 1
        return size

    def _length_prefixed(self, pos: int) -> int:
        """`ESC/GS/FS ( fn pL pH data`: skip the data by its 16-bit length."""
        if self._available(pos) < 5:
            return NEED_MORE
        self._skip_bytes = self._length_at(pos + 3)
        return 5

    def _length_at(self, pos: int) -> int:
        return self._buffer[pos] | self._buffer[pos + 1] << 8

    def _collect(self, size: int, done: Callable[[bytes], None], is_content: bool) -> None:
        """Hand the next `size` bytes to `done`, once they have all arrived."""
        if size == 0:
            done(b"")
            return
        self._collecting = _Collecting(size, bytearray(), done, is_content)

    def _take_collected(self, pos: int) -> int:
        collecting = self._collecting
        assert collecting is not None
        taken = min(collecting.missing, self._available(pos))
        collecting.data += self._buffer[pos : pos + taken]
        collecting.missing -= taken
        if collecting.missing == 0:
            self._collecting = None
            collecting.done(bytes(collecting.data))
        return taken

    def _drop_until_nul(self, pos: int) -> int:
        window = min(self._skip_until_nul, self._available(pos))
        nul = self._buffer.find(0, pos, pos + window)
        if nul >= 0:
            self._skip_until_nul = 0
            return nul - pos + 1
        self._skip_until_nul -= window
        return window
