"""Why a job failed at an agent: one classified reason per kind of failure.

An agent reports every failure with one of these codes (`AckRequest.reason`)
beside a short text for people. The code decides what the coordinator does
next, in one place for both sides:

- a **permanent** reason is a fact about the job itself (the PDF is not a PDF,
  its fonts are not embedded, its reference names nothing printable): no
  retry can succeed, so the job fails at once and a redrive is refused;
- a **transient** reason is a fact about the moment (the network, a timeout,
  the printer, the journal): the job retries with back-off, up to the
  coordinator's `max_attempts`.

The texts that travel with the codes are written by badgeline, never copied
from what a badge source answered: a kiosk reads them back with the job.
"""

from __future__ import annotations

from enum import StrEnum


class FailureReason(StrEnum):
    # The badge PDF, as the checks found it (the agent's and the artifact store's).
    NOT_A_PDF = "not_a_pdf"
    TOO_LARGE = "too_large"
    ENCRYPTED = "encrypted"
    MALFORMED = "malformed"
    TOO_MANY_PAGES = "too_many_pages"
    PAGE_SIZE = "page_size"
    FONT_NOT_EMBEDDED = "font_not_embedded"
    UNSUPPORTED_COMPRESSION = "unsupported_compression"
    TOO_COMPLEX = "too_complex"
    # The badge reference.
    BAD_REFERENCE = "bad_reference"  # cannot be used at all (scheme, characters, host)
    NOT_FOUND = "not_found"  # names nothing (no file, HTTP 404/410, expired artifact)
    NOT_A_FILE = "not_a_file"  # a directory, FIFO, device or symlink loop
    UNREADABLE = "unreadable"  # exists but may not or cannot be read
    NOT_ALLOWED = "not_allowed"  # outside the sources this agent may read
    REFUSED = "refused"  # the badge server refused it (HTTP 4xx)
    HASH_MISMATCH = "hash_mismatch"  # an artifact's bytes are not the ones it names
    # The moment: worth another try.
    FETCH_TIMEOUT = "fetch_timeout"  # the badge did not arrive within its time budget
    NETWORK = "network"  # refused, reset, unresolvable, TLS
    SERVER_ERROR = "server_error"  # the badge server answered 5xx or 429
    COORDINATOR_AWAY = "coordinator_away"  # no coordinator to fetch an artifact from
    RENDER_UNAVAILABLE = "render_unavailable"  # the render worker could not start
    PRINTER = "printer"  # the printer could not take the badge
    JOURNAL = "journal"  # the agent's journal could not be written
    INTERNAL = "internal"  # an unexpected fault in the agent (a bug: it is logged)


PERMANENT_REASONS = frozenset(
    {
        FailureReason.NOT_A_PDF,
        FailureReason.TOO_LARGE,
        FailureReason.ENCRYPTED,
        FailureReason.MALFORMED,
        FailureReason.TOO_MANY_PAGES,
        FailureReason.PAGE_SIZE,
        FailureReason.FONT_NOT_EMBEDDED,
        FailureReason.UNSUPPORTED_COMPRESSION,
        FailureReason.TOO_COMPLEX,
        FailureReason.BAD_REFERENCE,
        FailureReason.NOT_FOUND,
        FailureReason.NOT_A_FILE,
        FailureReason.UNREADABLE,
        FailureReason.NOT_ALLOWED,
        FailureReason.REFUSED,
        FailureReason.HASH_MISMATCH,
    }
)


def is_permanent(reason: FailureReason | None) -> bool:
    """Whether no retry of a job that failed for `reason` can succeed (None: unknown, retry)."""
    return reason in PERMANENT_REASONS
