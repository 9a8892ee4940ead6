"""Cursor pagination: one envelope for every list the API answers.

A list answers `{"items": [...], "next": <cursor> | null}`, beside any fields that
describe the whole list (a queue's `depth`, the reconciliation's `counts`).
`limit` bounds a page; `after` is the `next` of the page before. `next` is null
on the last page.

A cursor is opaque to clients: base64url of `{"l": <list tag>, "p": <position>}`,
where the tag names the list (and its scope: the attendee, the printer, the
grouping) and the position is the sort key of the page's last item (an id, a
score and an id), never an offset. So a page read after items were added or
removed starts right after the item the previous page ended with: no item is
shown twice and none present throughout is skipped; an item added before that
position is not seen (docs/api.md, "Pagination").
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from badgeline.protocol.errors import BadgelineError, ErrorCode

T = TypeVar("T")
Position = list[Any]

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
MAX_CURSOR_CHARS = 512
_FIRST_PAGE = "leave `after` out to start at the first page"


class PageQuery(BaseModel):
    """The paging parameters every list takes (route query models extend it)."""

    model_config = ConfigDict(extra="forbid")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT,
                       description=f"items per page, 1-{MAX_LIMIT}")  # fmt: skip
    after: str | None = Field(
        default=None, min_length=1, max_length=MAX_CURSOR_CHARS,
        description="the `next` cursor of the previous page; absent for the first page",
    )  # fmt: skip


def encode_cursor(tag: str, position: Position) -> str:
    raw = json.dumps({"l": tag, "p": position}, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _refused(message: str) -> BadgelineError:
    return BadgelineError(
        ErrorCode.VALIDATION_FAILED, f"the query string has invalid fields: after ({message})",
        fields=[{"loc": ["after"], "msg": message}],
    )  # fmt: skip


def _fits(position: Any, shape: Sequence[type]) -> bool:
    if not isinstance(position, list) or len(position) != len(shape):
        return False
    for value, kind in zip(position, shape, strict=True):
        if kind is float:  # a number: JSON has no int/float distinction worth keeping
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
            if value != value or value in (float("inf"), float("-inf")):
                return False
        elif not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            return False
    return True


def decode_cursor(after: str | None, tag: str, shape: Sequence[type]) -> Position | None:
    """The position `after` names in the list `tag`, or None for the first page.
    A cursor that is not one of ours, or is one of another list, is a 422 naming
    `after` and saying what to send instead."""
    if after is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(after + "=" * (-len(after) % 4))
        decoded = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        decoded = None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("l"), str):
        raise _refused(f"not a cursor this API made: send the `next` of a page, or {_FIRST_PAGE}")
    if decoded["l"] != tag:
        raise _refused(
            "a cursor of another list: send the `next` of a page of this list (the same "
            f"path and filters), or {_FIRST_PAGE}"
        )
    if not _fits(decoded.get("p"), shape):
        raise _refused(f"a damaged cursor: send the `next` of a page as given, or {_FIRST_PAGE}")
    position: Position = decoded["p"]
    return position


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next: str | None


def page_of(
    whole: Sequence[T], key: Callable[[T], Position], tag: str, query: PageQuery,
    shape: Sequence[type],
) -> Page[T]:  # fmt: skip
    """A page of a list held whole in memory, in the order of `key` (ascending)."""
    after = decode_cursor(query.after, tag, shape)
    rest = sorted((item for item in whole if after is None or key(item) > after), key=key)
    return page_from(rest[: query.limit + 1], key, tag, query.limit)


def page_from(fetched: Sequence[T], key: Callable[[T], Position], tag: str, limit: int) -> Page[T]:
    """A page from up to `limit + 1` items read after the cursor's position: the
    one past the limit only says that there is more."""
    items = list(fetched[:limit])
    more = len(fetched) > limit and items
    return Page(items, encode_cursor(tag, key(items[-1])) if more else None)
