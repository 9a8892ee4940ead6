"""Why a badge PDF is refused: one reason code per check, one exception type."""

from __future__ import annotations

from enum import StrEnum


class RejectReason(StrEnum):
    NOT_A_PDF = "not_a_pdf"
    TOO_LARGE = "too_large"
    ENCRYPTED = "encrypted"
    MALFORMED = "malformed"
    TOO_MANY_PAGES = "too_many_pages"
    PAGE_SIZE = "page_size"
    FONT_NOT_EMBEDDED = "font_not_embedded"
    UNSUPPORTED_COMPRESSION = "unsupported_compression"
    TOO_COMPLEX = "too_complex"


class BadgeRejected(Exception):
    """A badge PDF that must not be printed; `message` tells a person what is wrong."""

    def __init__(self, reason_code: RejectReason, message: str) -> None:
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message

    def __repr__(self) -> str:
        return f"BadgeRejected({self.reason_code.value!r}, {self.message!r})"
