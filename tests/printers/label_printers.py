"""The printer side of ZPL status and of Brother QL status, for the test printers.

Like dle_eot.StatusResponder, each is fed the bytes a printer receives and
returns the replies it would send; `TcpPrinter.responder` and the fake USB
backend's `responder` take one. These printers print at once unless told to
hold: a Zebra with `holding` set keeps every label it gets waiting (what ~HS
then counts), a Brother with `error` set answers its next page with "error
occurred" instead of "printing completed".
"""

from __future__ import annotations

from dataclasses import dataclass, field

STX, ETX, CRLF = b"\x02", b"\x03", b"\r\n"
# ESC i x: parameter bytes after x (Raster Command Reference, 4. Printing Command Details).
_ESC_I = {0x53: 0, 0x61: 1, 0x21: 1, 0x7A: 10, 0x4D: 1, 0x41: 1, 0x4B: 1, 0x64: 2}


@dataclass
class ZebraResponder:
    """Answers `~HS` and `~HQES`; counts `^XZ` as a label that prints, or waits (`holding`)."""

    answering: bool = True
    # Which conditions ~HS and ~HQES report (ZPL II Programming Guide, ~HS, ~HQ).
    paper_out: bool = False
    paused: bool = False
    head_up: bool = False
    ribbon_out: bool = False
    label_length: int = 609
    errors: int = 0
    warnings: int = 0
    # Silent to ~HS in media out, ribbon out, head open (the current guide's note).
    silent_in_faults: bool = False
    holding: bool = False
    waiting: int = 0  # labels held back
    printed: int = 0
    queries: list[bytes] = field(default_factory=list)
    _tail: bytes = b""

    def feed(self, data: bytes) -> bytes:
        stream, self._tail = self._tail + data, b""
        replies = bytearray()
        position = 0
        while True:
            marks = [(stream.find(token, position), token) for token in (b"~HQES", b"~HS", b"^XZ")]
            found = [(index, token) for index, token in marks if index >= 0]
            if not found:
                self._tail = stream[max(position, len(stream) - 4) :]
                break
            index, token = min(found)
            position = index + len(token)
            if token == b"^XZ":
                if self.holding:
                    self.waiting += 1
                else:
                    self.printed += 1
                continue
            self.queries.append(token)
            if self.answering:
                replies += self._answer(token)
        return bytes(replies)

    def release(self) -> None:
        """The held labels print (a fault cleared)."""
        self.printed += self.waiting
        self.waiting = 0
        self.holding = False

    def _answer(self, token: bytes) -> bytes:
        if token == b"~HQES":
            lines = [
                b"",
                b"  PRINTER STATUS",
                b"   ERRORS:         %d 00000000 %08X" % (bool(self.errors), self.errors),
                b"   WARNINGS:       %d 00000000 %08X" % (bool(self.warnings), self.warnings),
            ]
            return STX + CRLF.join(lines) + CRLF + ETX + CRLF
        if self.silent_in_faults and (self.paper_out or self.head_up or self.ribbon_out):
            return b""
        flag = lambda on: b"1" if on else b"0"  # noqa: E731
        first = b",".join(
            [
                b"030",
                flag(self.paper_out),
                flag(self.paused),
                b"%04d" % self.label_length,
                b"%03d" % self.waiting,
                b"0",
                b"0",
                b"0",
                b"000",
                b"0",
                b"0",
                b"0",
            ]
        )
        second = b",".join(
            [
                b"000",
                b"0",
                flag(self.head_up),
                flag(self.ribbon_out),
                b"0",
                b"2",
                b"0",
                b"0",
                b"%08d" % 0,
                b"1",
                b"000",
            ]
        )
        return b"".join(STX + part + ETX + CRLF for part in (first, second, b"1234,0"))


def ql_status(
    *,
    kind: int = 0x00,
    errors: tuple[int, int] = (0, 0),
    width_mm: int = 62,
    length_mm: int = 100,
    media_type: int = 0x0B,
    model: int = 0x41,
    phase: int = 0x00,
) -> bytes:
    """A 32-byte Brother QL status (Raster Command Reference, 4.2 Status information)."""
    frame = bytearray(32)
    frame[0:8] = bytes([0x80, 0x20, 0x42, 0x34, model, 0x30, 0x30, 0x00])
    frame[8], frame[9] = errors
    frame[10], frame[11] = width_mm, media_type
    frame[13], frame[17] = length_mm >> 8, length_mm & 0xFF
    frame[18], frame[19] = kind, phase
    return bytes(frame)


@dataclass
class BrotherResponder:
    """Answers `ESC i S`; after each page (Control-Z) sends printing, completed, waiting."""

    answering: bool = True
    errors: tuple[int, int] = (0, 0)
    width_mm: int = 62
    length_mm: int = 100
    media_type: int = 0x0B
    model: int = 0x41
    # The next page ends in "error occurred" (the printer clears it), not "completed".
    fail_next_page: bool = False
    # Pages are taken, but no notice is sent for them (until `holding` is cleared and
    # the printer next hears from the host).
    holding: bool = False
    held: int = 0
    printed: int = 0
    _tail: bytes = b""

    def _frame(self, **kwargs: int) -> bytes:
        return ql_status(
            errors=self.errors,
            width_mm=self.width_mm,
            length_mm=self.length_mm,
            media_type=self.media_type,
            model=self.model,
            **kwargs,
        )  # type: ignore[arg-type]

    def feed(self, data: bytes) -> bytes:
        """Reads the job command by command (raster lines may hold any byte)."""
        stream, self._tail = self._tail + data, b""
        replies = bytearray()
        while self.held and not self.holding:  # released: the held pages come out now
            self.held -= 1
            replies += self.finish_page()
        position = 0
        while position < len(stream):
            rest = stream[position:]
            size = _command_size(rest)
            if size is None:
                break  # the rest of the command is still on its way
            position += size
            if rest[:3] == b"\x1biS" and self.answering:
                replies += self._frame(kind=0x00)
            elif rest[0] in (0x1A, 0x0C):
                if self.holding:
                    self.held += 1
                else:
                    replies += self.finish_page()
        self._tail = stream[position:]
        return bytes(replies)

    def finish_page(self) -> bytes:
        if self.fail_next_page:
            self.fail_next_page = False
            return self._frame(kind=0x02, phase=0x00)
        self.printed += 1
        return (
            self._frame(kind=0x06, phase=0x01)
            + self._frame(kind=0x01, phase=0x01)
            + (self._frame(kind=0x06, phase=0x00))
        )


def _command_size(rest: bytes) -> int | None:
    """The bytes of the Brother QL command `rest` starts with; None: not all here yet."""
    byte = rest[0]
    if byte == 0x1B:
        if rest[1:2] == b"@":
            return 2
        if len(rest) < 3:
            return None
        size = 3 + _ESC_I.get(rest[2], 0)
    elif byte == 0x67:  # g 00h n d1..dn
        if len(rest) < 3:
            return None
        size = 3 + rest[2]
    elif byte == 0x4D:  # M n
        size = 2
    else:
        return 1  # NUL, Z, FF, Control-Z, or noise
    return size if len(rest) >= size else None
