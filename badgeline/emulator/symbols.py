"""Barcodes (`GS k`) and two-dimensional codes (`GS ( k`), as Epson's ESC/POS reference has them.

Commands modelled, by their names in Epson's ESC/POS Command Reference:

- `GS h n` Set bar code height (1..255 dots, default 162), `GS w n` Set bar
  code width (module, 2..6, default 3; 1 is accepted as some models do),
  `GS H n` Select print position of HRI characters (0/48 none, 1/49 above,
  2/50 below, 3/51 both; default none), `GS f n` Select font for HRI
  characters (0/48 font A, 1/49 font B).
- `GS k m d1..dk NUL` (m 0..6) and `GS k m n d1..dn` (m 65..79) Print bar
  code: drawn for the systems barcodes.py encodes, otherwise counted in
  `skipped_symbols`.
- `GS ( k pL pH cn fn ...` with cn 49, QR Code: <Function 165> Select the
  model (n1 49 model 1, 50 model 2, 51 micro QR; default model 2),
  <Function 167> Set the size of module (1..16 dots, default 3),
  <Function 169> Select the error correction level (48 L, 49 M, 50 Q, 51 H;
  default L), <Function 180> Store the data in the symbol storage area,
  <Function 181> Print the symbol data in the symbol storage area. Only
  model 2 is drawn. Other functions and the other symbol families (cn 48
  PDF417, 50 MaxiCode, 51 GS1 DataBar, 52 composite, 53 Aztec, 54
  DataMatrix) are skipped by their length; their print functions (fn 81)
  count in `skipped_symbols`.

ESC @ (Initialize printer) returns every setting here to its default and
forgets the stored QR data.
"""

from __future__ import annotations

from dataclasses import dataclass

from badgeline.emulator import barcodes
from badgeline.emulator.page import MAX_RASTER_WIDTH_DOTS, Barcode, HriFont, QrCode
from badgeline.emulator.stream import NEED_MORE, StreamDecoder

BARCODE_MAX_DATA = 255
# The barcode settings commands, by the byte after GS: GS h, GS w, GS H, GS f.
BARCODE_SETTINGS = frozenset({0x68, 0x77, 0x48, 0x66})
# The largest QR code (version 40, level L) holds 7089 digits; no more can print.
QR_MAX_DATA = 7089

TWO_D_CLASS = 0x6B  # GS ( k
_QR = 49
_QR_MODEL, _QR_MODULE, _QR_LEVEL, _QR_STORE, _QR_PRINT = 0x41, 0x43, 0x45, 0x50, 0x51
_QR_MODEL_2 = 50
_QR_LEVELS = {48: "L", 49: "M", 50: "Q", 51: "H"}
# GS ( k header: GS ( k pL pH cn fn; the store function adds m before its data.
_TWO_D_HEADER = 7
_SMALL_TWO_D = 16  # settings and print functions: read whole, never streamed


@dataclass
class _BarcodeSettings:
    height: int = 162
    module: int = 3
    hri_position: int = 0  # bit 0 above, bit 1 below
    hri_font: HriFont = HriFont.A


@dataclass
class _QrSettings:
    model: int = _QR_MODEL_2
    module: int = 3
    level: str = "L"
    stored: bytes | None = None


class SymbolDecoder(StreamDecoder):
    """The `GS k` and `GS ( k` handlers and the settings they print with."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped_symbols = 0  # barcodes and 2D codes received but not drawn
        self._barcode = _BarcodeSettings()
        self._qr = _QrSettings()

    def _reset_symbols(self) -> None:
        self._barcode = _BarcodeSettings()
        self._qr = _QrSettings()

    def _skip_symbol(self) -> None:
        self.skipped_symbols += 1

    # ------------------------------------------------------------ GS k

    def _apply_barcode_setting(self, command: int, value: int) -> None:
        """GS h n, GS w n, GS H n, GS f n; values out of range change nothing."""
        settings = self._barcode
        if command == 0x68 and value >= 1:
            settings.height = value
        elif command == 0x77 and 1 <= value <= 6:
            settings.module = value
        elif command == 0x48 and value in (0, 1, 2, 3, 48, 49, 50, 51):
            settings.hri_position = value % 48
        elif command == 0x66 and value in (0, 1, 48, 49):
            settings.hri_font = HriFont(value % 48)

    def _gs_barcode(self, pos: int) -> int:
        """`GS k m d... NUL` (m 0..6) or `GS k m n d1..dn` (m 65..79)."""
        if self._available(pos) < 3:
            return NEED_MORE
        kind = self._buffer[pos + 2]
        if kind <= 6:
            return self._barcode_until_nul(pos, kind)
        if not 65 <= kind <= 79:
            return self._unknown(3)
        if self._available(pos) < 4:
            return NEED_MORE
        size = 4 + self._buffer[pos + 3]
        if self._available(pos) < size:
            return NEED_MORE
        self._print_barcode(kind, bytes(self._buffer[pos + 4 : pos + size]))
        return size

    def _barcode_until_nul(self, pos: int, kind: int) -> int:
        window_end = pos + 3 + BARCODE_MAX_DATA + 1
        nul = self._buffer.find(0, pos + 3, window_end)
        if nul >= 0:
            self._print_barcode(kind, bytes(self._buffer[pos + 3 : nul]))
            return nul - pos + 1
        if len(self._buffer) < window_end:
            return NEED_MORE
        # No NUL within the longest data a barcode has: not one; decoding goes on after it.
        self._skip_symbol()
        return window_end - pos

    def _print_barcode(self, kind: int, data: bytes) -> None:
        settings = self._barcode
        encoded = barcodes.encode(barcodes.system_of(kind), data, settings.module)
        if encoded is None:
            self._skip_symbol()
            return
        if sum(encoded.bars) > MAX_RASTER_WIDTH_DOTS:
            self._builder.mark_truncated()
            self._skip_symbol()
            return
        self._builder.add_symbol(Barcode(
            encoded.bars, settings.height, encoded.hri,
            hri_above=bool(settings.hri_position & 1),
            hri_below=bool(settings.hri_position & 2),
            hri_font=settings.hri_font,
        ))  # fmt: skip

    # ------------------------------------------------------------ GS ( k

    def _gs_two_d(self, pos: int) -> int:
        """`GS ( k pL pH cn fn ...`: QR Code functions; other families skipped by length."""
        if self._available(pos) < 5:
            return NEED_MORE
        length = self._length_at(pos + 3)
        if length < 2:
            return self._length_prefixed(pos)
        if self._available(pos) < _TWO_D_HEADER:
            return NEED_MORE
        family, function = self._buffer[pos + 5], self._buffer[pos + 6]
        if family == _QR and function == _QR_STORE:
            return self._qr_store(pos, length)
        if family != _QR or length > _SMALL_TWO_D:
            if function == _QR_PRINT:
                self._skip_symbol()
            return self._length_prefixed(pos)
        size = 5 + length
        if self._available(pos) < size:
            return NEED_MORE
        self._qr_function(function, bytes(self._buffer[pos + _TWO_D_HEADER : pos + size]))
        return size

    def _qr_function(self, function: int, params: bytes) -> None:
        qr = self._qr
        if function == _QR_MODEL and len(params) == 2 and params[0] in (49, 50, 51):
            qr.model = params[0]
        elif function == _QR_MODULE and len(params) == 1 and 1 <= params[0] <= 16:
            qr.module = params[0]
        elif function == _QR_LEVEL and len(params) == 1 and params[0] in _QR_LEVELS:
            qr.level = _QR_LEVELS[params[0]]
        elif function == _QR_PRINT:
            self._qr_print()

    def _qr_store(self, pos: int, length: int) -> int:
        """<Function 180>: `pL pH 49 80 48 d1..dk`, k = length - 3, streamed in."""
        if length < 3:
            return self._length_prefixed(pos)
        if self._available(pos) < _TWO_D_HEADER + 1:
            return NEED_MORE
        data_size = length - 3
        if data_size > QR_MAX_DATA:
            self._qr.stored = None  # too much for any QR code: nothing to print
            self._skip_bytes = data_size
        else:
            self._collect(data_size, self._qr_stored, is_content=False)
        return _TWO_D_HEADER + 1

    def _qr_stored(self, data: bytes) -> None:
        self._qr.stored = data

    def _qr_print(self) -> None:
        """<Function 181>: the symbol of the stored data, at the module size and level set."""
        qr = self._qr
        if qr.stored is None or not qr.stored or qr.model != _QR_MODEL_2:
            self._skip_symbol()
            return
        self._builder.add_symbol(QrCode(qr.stored, qr.module, qr.level))
