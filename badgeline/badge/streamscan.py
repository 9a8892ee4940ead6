"""Bound how far a PDF's streams expand before PDFium decodes any of them.

PDFium inflates streams without a size cap: on this machine a 1 MB PDF whose
page content inflates to 1 GB took 7.7 s and 2.9 GB of memory just to load
page 1, which on a Raspberry Pi means the OOM killer. So before PDFium sees a
file we find every `stream` in the raw bytes and decode its compression
chain ourselves, counting output against one budget for the whole file.

This is a heuristic pre-scan, not a PDF parser: it recognises zlib
(FlateDecode), ASCII85 and ASCIIHex stages by their bytes rather than by the
stream dictionary, so a `/Length` that lies or a filter named through an
indirect object cannot hide a stage from it. Filters it cannot bound here
(LZW, RunLength: legacy, and both expand far more than 10:1) are refused by
name wherever the name appears, raw or decoded. What it cannot see (a form
drawn a million times) is left to the render worker's memory cap and deadline
in `sandbox`.
"""

from __future__ import annotations

import base64
import bisect
import re
import zlib
from dataclasses import dataclass

from badgeline.badge.errors import BadgeRejected, RejectReason

# PDFium takes the word `stream` (not `endstream`, hence the look-behind),
# ignores the rest of its line, and reads the data from the next line on.
# Matches never overlap, so finding them all is one linear pass.
_STREAM_KEYWORD = re.compile(
    rb"(?<![A-Za-z0-9])stream(?=[\x00\t\n\x0c\r ()<>\[\]{}/%])[^\r\n]*(?:\r\n|\r|\n)"
)
_PDF_WHITESPACE = b"\x00\t\n\x0c\r "
_ASCII85_RUN = re.compile(rb"[!-uz\x00\t\n\x0c\r ]*")
_ASCIIHEX_RUN = re.compile(rb"[0-9A-Fa-f\x00\t\n\x0c\r ]*>")
_LEGACY_FILTER = re.compile(
    rb"/(?:LZWDecode|RunLengthDecode)(?![A-Za-z0-9])"
    # Inline images use abbreviated names, always right after the /F key.
    rb"|/F\s*\[?\s*/(?:LZW|RL)(?![A-Za-z0-9])"
)
# A filter chain longer than this is not something a badge generator writes.
_MAX_CHAIN_STAGES = 4
_INFLATE_CHUNK = 64 * 1024
# Each stream is normally scanned once; overlapping fake `stream` keywords
# could make us rescan the same bytes, so cap total input work too.
_INPUT_WORK_FACTOR = 4


@dataclass
class _Budget:
    max_decoded_bytes: int
    max_input_bytes: int
    max_streams: int
    decoded: int = 0
    consumed: int = 0
    streams: int = 0

    @property
    def decoded_room(self) -> int:
        return self.max_decoded_bytes - self.decoded

    def spend_decoded(self, count: int) -> None:
        self.decoded += count
        if self.decoded > self.max_decoded_bytes:
            limit_mib = self.max_decoded_bytes / (1024 * 1024)
            raise BadgeRejected(
                RejectReason.TOO_COMPLEX,
                f"The badge PDF's compressed content expands to more than {limit_mib:g} MiB; "
                "a badge never needs that much. Re-export it with smaller images.",
            )

    def spend_input(self, count: int) -> None:
        self.consumed += count
        if self.consumed > self.max_input_bytes:
            raise BadgeRejected(
                RejectReason.TOO_COMPLEX,
                "The badge PDF's structure is too convoluted to check safely. Re-export it.",
            )

    def count_stream(self) -> None:
        self.streams += 1
        if self.streams > self.max_streams:
            raise BadgeRejected(
                RejectReason.TOO_COMPLEX,
                f"The badge PDF has more than {self.max_streams} data streams; "
                "a badge needs a handful. Re-export it as a simple one-page PDF.",
            )

    def inspect(self, data: bytes) -> None:
        """Check raw or decoded bytes for the names of filters we cannot bound."""
        if _LEGACY_FILTER.search(data):
            raise BadgeRejected(
                RejectReason.UNSUPPORTED_COMPRESSION,
                "The badge PDF uses legacy LZW or RunLength compression, which the printer "
                "agent does not accept. Re-export it from a current PDF tool.",
            )


def check_stream_expansion(pdf_bytes: bytes, *, max_decoded_bytes: int, max_streams: int) -> None:
    """Refuse `pdf_bytes` if its streams decode to more than `max_decoded_bytes` in total.

    Also refuses more than `max_streams` streams and legacy filters we cannot
    bound. Raises `BadgeRejected`; returns None when the file is within bounds.
    """
    budget = _Budget(
        max_decoded_bytes=max_decoded_bytes,
        max_input_bytes=_INPUT_WORK_FACTOR * len(pdf_bytes) + max_decoded_bytes,
        max_streams=max_streams,
    )
    budget.inspect(pdf_bytes)
    ascii85_ends = [match.start() for match in re.finditer(rb"~>", pdf_bytes)]
    for keyword in _STREAM_KEYWORD.finditer(pdf_bytes):
        budget.count_stream()
        _decode_chain(pdf_bytes, keyword.end(), budget, ascii85_ends)


def _decode_chain(data: bytes, start: int, budget: _Budget, ascii85_ends: list[int]) -> None:
    stage_input, stage_start, terminators = data, start, ascii85_ends
    for _ in range(_MAX_CHAIN_STAGES):
        decoded = _decode_stage(stage_input, stage_start, budget, terminators)
        if decoded is None:
            return
        # Decoded bytes may be page content, or object streams that name filters.
        budget.inspect(decoded)
        stage_input, stage_start = decoded, 0
        terminators = [match.start() for match in re.finditer(rb"~>", decoded)]


def _decode_stage(
    data: bytes, start: int, budget: _Budget, ascii85_ends: list[int]
) -> bytes | None:
    """Decode one compression stage that starts at `start`, or None if none is recognised."""
    start = _skip_whitespace(data, start)
    if _looks_like_zlib(data, start):
        return _inflate_bounded(data, start, budget)
    decoded = _decode_asciihex(data, start, budget)
    if decoded is None:
        decoded = _decode_ascii85(data, start, budget, ascii85_ends)
    return decoded


def _skip_whitespace(data: bytes, start: int) -> int:
    end = min(len(data), start + 64)
    while start < end and data[start] in _PDF_WHITESPACE:
        start += 1
    return start


def _looks_like_zlib(data: bytes, start: int) -> bool:
    # RFC 1950 header: deflate method, and the two bytes are a multiple of 31.
    if start + 2 > len(data):
        return False
    method_and_window, flags = data[start], data[start + 1]
    return method_and_window & 0x0F == 8 and (method_and_window << 8 | flags) % 31 == 0


def _inflate_bounded(data: bytes, start: int, budget: _Budget) -> bytes:
    """Inflate until the zlib stream ends, ignoring `endstream`: PDFium may trust `/Length`."""
    view = memoryview(data)
    inflater = zlib.decompressobj()
    output = bytearray()
    position = start
    while not inflater.eof:
        chunk: bytes | memoryview = inflater.unconsumed_tail
        if not chunk:
            if position >= len(data):
                break
            chunk = view[position : position + _INFLATE_CHUNK]
            position += len(chunk)
            budget.spend_input(len(chunk))
        try:
            piece = inflater.decompress(chunk, budget.decoded_room + 1)
        except zlib.error:
            break  # corrupt data stops PDFium's zlib at the same point
        budget.spend_decoded(len(piece))
        output += piece
    return bytes(output)


def _decode_asciihex(data: bytes, start: int, budget: _Budget) -> bytes | None:
    run = _ASCIIHEX_RUN.match(data, start)
    if run is None or run.end() - start < 2:
        return None
    budget.spend_input(run.end() - start)
    digits = data[start : run.end() - 1].translate(None, _PDF_WHITESPACE)
    if len(digits) % 2:
        digits += b"0"  # the PDF spec pads an odd final digit with 0
    decoded = bytes.fromhex(digits.decode("ascii"))
    budget.spend_decoded(len(decoded))
    return decoded


def _decode_ascii85(
    data: bytes, start: int, budget: _Budget, ascii85_ends: list[int]
) -> bytes | None:
    end_index = bisect.bisect_left(ascii85_ends, start)
    if end_index == len(ascii85_ends):
        return None
    end = ascii85_ends[end_index]
    run = _ASCII85_RUN.match(data, start, end)
    if run is None or run.end() != end or end == start:
        return None
    budget.spend_input(end - start)
    # `z` stands for four zero bytes, the one way ASCII85 expands: bound it first.
    zero_groups = data.count(b"z", start, end)
    if zero_groups * 4 + (end - start - zero_groups) > budget.decoded_room:
        budget.spend_decoded(zero_groups * 4 + (end - start - zero_groups))
    try:
        decoded = base64.a85decode(data[start:end], ignorechars=_PDF_WHITESPACE)
    except ValueError:
        return None
    budget.spend_decoded(len(decoded))
    return decoded
