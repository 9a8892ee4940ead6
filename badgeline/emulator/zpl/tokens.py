"""ZPL II commands out of a byte stream split anywhere (ZPL II Programming Guide, "ZPL
Commands": a caret or tilde prefix, a two-character name, parameters up to the next
prefix).

A command's parameters end where the next command starts, so a command is
complete only once the next prefix (or, for the commands that take none, its
name) has arrived. `^GF` with binary data (`B`, or `C` compressed binary)
carries a byte count instead, and its data may contain prefix characters, so
it is read by that count. Bytes outside any command are ignored, as the
printer ignores them; carriage returns and line feeds inside parameters too.
"""

from __future__ import annotations

from dataclasses import dataclass

CARET, TILDE = ord("^"), ord("~")
# Commands without parameters: complete as soon as their name has arrived.
NO_PARAMETERS = frozenset({"XA", "XZ", "FS", "HS", "JA", "PS", "PP", "FR", "JB", "HM", "HI"})
# ~HQ takes a two-letter query type (~HQES).
FIXED_PARAMETERS = {"HQ": 2}
# Longer than this (8 MiB: a label 2400 dots wide and 12000 long as plain hex
# is 7.2 MB), a command is dropped rather than held in memory.
MAX_COMMAND_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Command:
    prefix: str  # "^" (format command) or "~" (control command)
    name: str  # two characters, upper case
    params: bytes


class Tokenizer:
    def __init__(self) -> None:
        self.oversized = 0  # commands dropped for their length
        self._buffer = bytearray()
        self._scanned = 3  # where the search for the next prefix resumes
        self._discarding = False

    def feed(self, data: bytes) -> list[Command]:
        self._buffer += data
        commands: list[Command] = []
        while self._buffer:
            if self._discarding or self._buffer[0] not in (CARET, TILDE):
                start = _next_prefix(self._buffer, 0)
                if start < 0:
                    self._buffer.clear()
                    break
                del self._buffer[:start]
                self._discarding = False
            if len(self._buffer) < 3:
                break
            end = self._command_end()
            if end < 0:
                if len(self._buffer) > MAX_COMMAND_BYTES:
                    # Drop its prefix and everything up to the next command.
                    self.oversized += 1
                    del self._buffer[:1]
                    self._discarding = True
                    self._scanned = 3
                    continue
                break
            commands.append(self._take(end))
        return commands

    def _take(self, end: int) -> Command:
        name = bytes(self._buffer[1:3]).decode("latin-1").upper()
        params = bytes(self._buffer[3:end])
        if not _binary_graphic(name, params):
            params = params.translate(None, b"\r\n")
        command = Command(chr(self._buffer[0]), name, params)
        del self._buffer[:end]
        self._scanned = 3
        return command

    def _command_end(self) -> int:
        """Where the command at the start of the buffer ends, or -1: not all arrived."""
        name = bytes(self._buffer[1:3]).decode("latin-1").upper()
        if name in NO_PARAMETERS:
            return 3
        if name in FIXED_PARAMETERS and self._buffer[0] == TILDE:
            end = 3 + FIXED_PARAMETERS[name]
            return end if len(self._buffer) >= end else -1
        if name == "GF" and self._buffer[0] == CARET:
            counted = self._binary_graphic_end()
            if counted is not None:
                return counted
        end = _next_prefix(self._buffer, self._scanned)
        if end < 0:
            self._scanned = max(3, len(self._buffer))
        return end

    def _binary_graphic_end(self) -> int | None:
        """`^GFB,b,c,d,data` / `^GFC,...`: the end after b bytes of data; None when it is
        ASCII data (ended by the next prefix); -1 while the header or data is arriving."""
        if len(self._buffer) < 4:
            return -1
        if self._buffer[3:4].upper() not in (b"B", b"C"):
            return None
        commas, position = 0, 3
        while commas < 4:
            position = self._buffer.find(b",", position + 1, position + 64)
            if position < 0:
                # A header that long is not a header: read it as ASCII up to a prefix.
                return -1 if len(self._buffer) < 3 + 64 else None
            commas += 1
        fields = bytes(self._buffer[3:position]).split(b",")
        try:
            count = int(fields[1])
        except ValueError:
            return None
        if count > MAX_COMMAND_BYTES:
            return None
        end = position + 1 + count
        return end if len(self._buffer) >= end else -1


def _binary_graphic(name: str, params: bytes) -> bool:
    return name == "GF" and params[:1].upper() in (b"B", b"C")


def _next_prefix(buffer: bytearray, start: int) -> int:
    caret, tilde = buffer.find(CARET, start), buffer.find(TILDE, start)
    if caret < 0:
        return tilde
    return caret if tilde < 0 else min(caret, tilde)
