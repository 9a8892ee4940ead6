"""Replies of another printer family, seen on a printer's line: how a printer configured in
one language that answers in another is told apart from a silent one.

A Brother QL's status is 32 bytes starting 80h 20h 42h (Raster Command Reference, 4.2
Status information); a Zebra's `~HS` and `~HQ` answers are framed STX ... ETX, digits and
commas for `~HS` (ZPL II Programming Guide, `~HS`). Neither family is asked the other's
questions (an Epson takes `ESC i` for a cut, a Zebra prints what it does not know as
text), so only what a printer sends by itself, or in answer to its own family's
question, names it.
"""

from __future__ import annotations

import re

BROTHER_STATUS_HEAD = b"\x80\x20\x42"
# One `~HS` string: STX, digits and commas (a dozen fields), ETX.
_ZEBRA_HOST_STATUS = re.compile(rb"\x02[0-9]{3}(?:,[0-9]+){9,11}\x03")
# Longer than either mark, so one split across two reads is still found.
TAIL_BYTES = 64


def foreign_family(data: bytes) -> str | None:
    """The family (`[printer] language`) whose reply `data` holds, if any."""
    if BROTHER_STATUS_HEAD in data:
        return "brother_ql"
    if _ZEBRA_HOST_STATUS.search(data):
        return "zpl"
    return None


def language_hint(foreign: str | None, silent: str) -> str:
    """What a status problem's detail says in brackets: the setting to change when the
    printer answered as another family, else `silent` (why it may not have answered)."""
    if foreign:
        return f'it answered as a {foreign} printer: set printer.language = "{foreign}"'
    return silent
