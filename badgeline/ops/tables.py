"""Plain-text tables and the small formatting rules every command shares."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

_SPACE = re.compile(r"\s+")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, each under its header; `-` for a missing
    value. Every header is one word and every cell but the last column's one word (a
    space inside becomes `_`), so a row splits into as many fields as there are headers
    (`awk`, `cut`, a reader's eye); the last column may be a phrase (a reason)."""
    for header in headers:
        if not header or _SPACE.search(header):
            raise ValueError(f"a table header is one word, not {header!r}")
    cells = [[_one_word(cell(value)) for value in row[:-1]] + [cell(row[-1])] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = [headers, *cells]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _one_word(text: str) -> str:
    return _SPACE.sub("_", text.strip())


def cell(value: Any) -> str:
    if value is None or value == [] or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def seconds(value: float | None) -> str:
    """An age or a wait, as an operator reads it: 4.2s, 3m05s, 2h10m."""
    if value is None:
        return "-"
    value = max(0.0, value)  # two reads of the Redis clock can be a hair apart
    if value < 60:
        return f"{value:.1f}s"
    minutes, secs = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def clock(unix_s: float | None) -> str:
    if unix_s is None:
        return "-"
    return datetime.fromtimestamp(unix_s, UTC).strftime("%H:%M:%S")


def section(title: str, body: str) -> str:
    return f"{title}\n{body}" if body else f"{title}\n(none)"
