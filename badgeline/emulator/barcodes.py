"""`GS k` barcode data to bars, for the systems the emulator draws.

The bar patterns are the symbologies' own (EAN/UPC, Code 39, Code 128) as
python-barcode's character-set tables hold them; how the data is read, the
check digits and the bar widths follow Epson's ESC/POS Command Reference:

- `GS k` (Print bar code) <m>: 0/65 UPC-A (11 or 12 digits), 2/67 JAN13/EAN-13
  (12 or 13), 3/68 JAN8/EAN-8 (7 or 8), 4/69 CODE39, 73 CODE128. Sent
  without its check digit, a UPC/EAN code gets the one the printer
  computes; sent with a wrong one it is not drawn (the emulator's choice,
  so that a host's bug shows). Other systems (UPC-E, ITF, CODABAR, CODE93,
  GS1) are not drawn.
- CODE128 data starts with a code set selector, `{A`, `{B` or `{C`; inside
  the data `{` introduces a special character: `{A` `{B` `{C` change the
  code set, `{S` shifts one character, `{1`..`{4` are FNC1..FNC4 and `{{` is
  the `{` character itself. In code set C each byte is one value, 0..99 (two
  digits). The printer adds the start character, the check character and
  the stop character.
- `GS w n` (Set bar code width): multi-level symbologies (UPC, EAN, CODE128)
  draw one module `n` dots wide; binary-level ones (CODE39) draw thin and
  thick elements of 2:5, 3:8, 4:10, 5:13 or 6:15 dots.

`encode` never raises on data: data a printer would not print is None.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType

logger = logging.getLogger(__name__)

# GS k m, m 0..6 and 65..79 (65 is system 0): the systems this module draws.
UPC_A, EAN13, EAN8, CODE39, CODE128 = 0, 2, 3, 4, 8
# GS w n for binary-level symbologies: thin and thick element widths in dots.
_THIN_THICK = {1: (1, 3), 2: (2, 5), 3: (3, 8), 4: (4, 10), 5: (5, 13), 6: (6, 15)}

_CODE128_START = {"A": 103, "B": 104, "C": 105}
_CODE128_SWITCH = {"A": 101, "B": 100, "C": 99}  # Code A / Code B / Code C characters
_CODE128_SHIFT = 98
_CODE128_FNC = {"1": 102, "2": 97, "3": 96}  # FNC4 depends on the code set
_CODE128_FNC4 = {"A": 101, "B": 100}
_CODE128_STOP_BAR = "11"  # the stop pattern ends with a two-module bar


@dataclass(frozen=True)
class EncodedBarcode:
    bars: tuple[int, ...]  # bar and space widths in dots, bar first
    hri: str  # the human readable interpretation


def system_of(m: int) -> int:
    """The barcode system of `GS k m` (m 65..79 are the length-prefixed forms of 0..14)."""
    return m if m <= 6 else m - 65


def encode(system: int, data: bytes, module_dots: int) -> EncodedBarcode | None:
    """The bars of `data` in `system`, `module_dots` the GS w width; None if not drawn."""
    tables = _tables()
    if tables is None:
        return None
    if system in (UPC_A, EAN13, EAN8):
        return _ean(system, data, module_dots, tables.ean)
    if system == CODE39:
        return _code39(data, module_dots, tables.code39)
    if system == CODE128:
        return _code128(data, module_dots, tables.code128)
    return None


@dataclass(frozen=True)
class _Tables:
    ean: ModuleType
    code39: ModuleType
    code128: ModuleType


@lru_cache(maxsize=1)
def _tables() -> _Tables | None:
    try:
        from barcode.charsets import code39, code128, ean
    except ImportError:
        logger.warning("python-barcode is not installed: barcodes are not drawn")
        return None
    return _Tables(ean, code39, code128)


def _runs(modules: str, module_dots: int) -> tuple[int, ...]:
    """'1110100' -> (3, 1, 1, 2) modules, as dots; a pattern starts with a bar."""
    return tuple(len(list(run)) * module_dots for _, run in itertools.groupby(modules))


# ------------------------------------------------------------ UPC-A, EAN-13, EAN-8

_DIGITS = {UPC_A: 11, EAN13: 12, EAN8: 7}  # without the check digit


def _ean(system: int, data: bytes, module_dots: int, ean: ModuleType) -> EncodedBarcode | None:
    digits = _DIGITS[system]
    if len(data) not in (digits, digits + 1) or not data.isdigit():
        return None
    text = data.decode("ascii")
    check = _ean_check_digit(text[:digits])
    if len(text) == digits + 1 and text[-1] != check:
        return None
    text = text[:digits] + check
    # UPC-A is EAN-13 with a leading 0.
    symbol = "0" + text if system == UPC_A else text
    if system == EAN8:
        modules = _ean_halves(symbol[:4], "AAAA", symbol[4:], ean)
    else:
        parity = ean.LEFT_PATTERN[int(symbol[0])]
        modules = _ean_halves(symbol[1:7], parity, symbol[7:], ean)
    return EncodedBarcode(_runs(modules, module_dots), text)


def _ean_check_digit(digits: str) -> str:
    # Weights 3, 1, 3, ... from the rightmost digit.
    total = sum(int(digit) * (3 if index % 2 == 0 else 1)
                for index, digit in enumerate(reversed(digits)))  # fmt: skip
    return str(-total % 10)


def _ean_halves(left: str, parity: str, right: str, ean: ModuleType) -> str:
    pairs = zip(left, parity, strict=True)
    left_modules = "".join(ean.CODES[code][int(digit)] for digit, code in pairs)
    right_modules = "".join(ean.CODES["C"][int(digit)] for digit in right)
    return ean.EDGE + left_modules + ean.MIDDLE + right_modules + ean.EDGE


# ------------------------------------------------------------ CODE39


def _code39(data: bytes, module_dots: int, code39: ModuleType) -> EncodedBarcode | None:
    text = data.decode("ascii", errors="replace")
    # The start/stop character '*' may be sent; the printer adds it when it is not.
    if len(text) >= 2 and text[0] == text[-1] == "*":
        text = text[1:-1]
    if not text or any(character not in code39.MAP for character in text):
        return None
    patterns = [code39.EDGE, *(code39.MAP[character][1] for character in text), code39.EDGE]
    modules = code39.MIDDLE.join(patterns)
    thin, thick = _THIN_THICK[module_dots]
    # python-barcode draws thin elements 1 module wide and thick ones 3.
    bars = tuple(thin if width == 1 else thick for width in _runs(modules, 1))
    return EncodedBarcode(bars, f"*{text}*")


# ------------------------------------------------------------ CODE128


def _code128(data: bytes, module_dots: int, code128: ModuleType) -> EncodedBarcode | None:
    parsed = _code128_values(data)
    if parsed is None:
        return None
    values, hri = parsed
    check = sum(value * max(1, index) for index, value in enumerate(values)) % 103
    modules = "".join(code128.CODES[value] for value in [*values, check])
    modules += code128.STOP + _CODE128_STOP_BAR
    return EncodedBarcode(_runs(modules, module_dots), hri)


def _code128_values(data: bytes) -> tuple[list[int], str] | None:
    """The symbol values from the start character on, and the HRI; None if invalid."""
    if len(data) < 2 or data[0] != ord("{") or chr(data[1]) not in _CODE128_START:
        return None
    code_set = chr(data[1])
    values, hri = [_CODE128_START[code_set]], []
    position, shifted = 2, False
    while position < len(data):
        byte = data[position]
        if byte == ord("{") and position + 1 < len(data) and data[position + 1] != ord("{"):
            special = chr(data[position + 1])
            value, code_set, shifted = _code128_special(special, code_set)
            if value is None:
                return None
            values.append(value)
            position += 2
            continue
        if byte == ord("{"):
            position += 1  # `{{` is one `{`
        current = ("B" if code_set == "A" else "A") if shifted else code_set
        value = _code128_data_value(byte, current)
        if value is None:
            return None
        values.append(value)
        hri.append(f"{byte:02d}" if current == "C" else _printable(byte))
        position, shifted = position + 1, False
    if len(values) == 1:
        return None
    return values, "".join(hri)


def _code128_special(special: str, code_set: str) -> tuple[int | None, str, bool]:
    """A `{x` special character: its value, the code set after it, whether it shifts."""
    if special in _CODE128_SWITCH and special != code_set:
        return _CODE128_SWITCH[special], special, False
    if special == "S" and code_set != "C":
        return _CODE128_SHIFT, code_set, True
    if special in _CODE128_FNC:
        return _CODE128_FNC[special], code_set, False
    if special == "4" and code_set in _CODE128_FNC4:
        return _CODE128_FNC4[code_set], code_set, False
    return None, code_set, False


def _code128_data_value(byte: int, code_set: str) -> int | None:
    if code_set == "C":
        return byte if byte <= 99 else None
    if code_set == "A":
        if byte < 0x20:
            return byte + 64
        return byte - 0x20 if byte < 0x60 else None
    return byte - 0x20 if 0x20 <= byte < 0x80 else None


def _printable(byte: int) -> str:
    return chr(byte) if 0x20 <= byte < 0x7F else " "
