"""PrinterLink: the small blocking surface every printer connection offers.

``open / write / read_status / close``, after python-escpos's own
``open/_raw/_read/close``. Implementations block (sockets, device files, or
python-escpos's USB printer), so the agent calls them through
``AsyncPrinterLink``.

Rules every link follows:

- Each operation holds the link's lock for its whole duration, so a status
  query never lands between two halves of a write, and a call abandoned by a
  cancelled asyncio task still finishes before the next one starts.
- ``write`` and ``read_status`` open the link on demand; an I/O error closes
  it, so the next call reconnects (a printer that was switched off and on
  again comes back without anyone restarting the agent).
- Every blocking call is bounded by the connection's timeout. Writes go out
  in chunks, each with its own timeout: a printer printing a long badge
  takes data slowly but steadily, and only one that stops taking it fails.
- Library exceptions never leave a link: they become ``PrinterLinkError``.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from badgeline.agent.printers.errors import (
    PrinterLinkError,
    PrinterTimeoutError,
    StatusUnavailableError,
)
from badgeline.agent.printers.replies import ReplySorter

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A printer that keeps sending unasked-for bytes is broken; stop draining after this many reads.
MAX_DRAIN_READS = 64
# Small enough that a slow but working printer takes a chunk well within any timeout.
WRITE_CHUNK = 4096


@dataclass(frozen=True)
class LinkIo:
    """The raw steps of an open link, lent to an exchange run by ``PrinterLink.converse``."""

    write: Callable[[bytes], None]  # send all of it, or raise
    read: Callable[[], bytes | None]  # reply bytes; None when nothing came within the timeout
    drain: Callable[[], None]  # discard status bytes already waiting (responses are kept)
    # Wait up to the given seconds for reply bytes, returning as soon as some are
    # there (without reading them); a link that cannot tell just sleeps.
    wait: Callable[[float], None] = time.sleep
    # The link's process ID responses, kept across operations until claimed.
    replies: ReplySorter = field(default_factory=ReplySorter)


class PrinterLink(ABC):
    """One connection to one printer. Blocking and thread-safe."""

    def __init__(self, description: str) -> None:
        self.description = description
        self._lock = threading.RLock()
        self._is_open = False
        # Process ID responses read by any operation, until a wait claims them.
        self.replies = ReplySorter()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.description} open={self._is_open}>"

    @property
    def is_open(self) -> bool:
        return self._is_open

    @property
    @abstractmethod
    def timeout_s(self) -> float:
        """The longest any single blocking step of this link may take."""

    @property
    def can_read_status(self) -> bool:
        """Whether status bytes can come back on this link; known once it is open."""
        return True

    def open(self) -> None:
        """Connect to the printer; a no-op when already open."""
        with self._lock:
            if self._is_open:
                return
            try:
                self._open_device()
            except PrinterLinkError:
                raise
            except OSError as error:
                raise self._link_error(error) from error
            except Exception as error:
                raise self._unexpected(error) from error
            self._is_open = True
            # A new connection: nothing asked on the old one will be answered here.
            self.replies = ReplySorter()

    def write(self, data: bytes) -> None:
        """Send ESC/POS bytes; returns once the printer (or its buffer) has taken them all."""
        with self._lock:
            self._guarded(lambda: self._write_chunks(data))

    def read_status(self, query: bytes) -> bytes | None:
        """Send one real-time status query and return the reply, or None if none came in time.

        Stale bytes (a reply that arrived after an earlier query timed out) are
        discarded first, so the reply belongs to this query.
        """
        with self._lock:
            self.open()
            if not self.can_read_status:
                raise StatusUnavailableError(f"{self.description} cannot report status")
            return self._guarded(lambda: self._query(query))

    def converse(self, exchange: Callable[[LinkIo], T]) -> T:
        """Run a multi-step exchange (e.g. waiting for a print completion) under the lock.

        No other query can read, or drain, its replies meanwhile. Errors are
        handled as for ``read_status``; a link that cannot read raises
        StatusUnavailableError.
        """
        with self._lock:
            self.open()
            if not self.can_read_status:
                raise StatusUnavailableError(f"{self.description} cannot read replies")
            io = LinkIo(
                write=self._write,
                read=self._read_reply,
                drain=self._drain_keeping,
                wait=self._wait_readable,
                replies=self.replies,
            )
            return self._guarded(lambda: exchange(io))

    def close(self) -> None:
        """Release the connection; safe to call more than once."""
        with self._lock:
            if not self._is_open:
                return
            self._is_open = False
            try:
                self._close_device()
            except Exception:
                # Closing a dead connection can fail in many library-specific
                # ways; none of them should stop the agent from reconnecting.
                logger.debug("closing %s failed", self.description, exc_info=True)

    def _write_chunks(self, data: bytes) -> None:
        for start in range(0, len(data), WRITE_CHUNK):
            self._write(data[start : start + WRITE_CHUNK])

    def _query(self, query: bytes) -> bytes | None:
        self._drain_keeping()
        self._write(query)
        # Read up to a status byte: a process ID response may come first (a badge
        # in flight), and is kept for the wait that claims it.
        while (reply := self._read_reply()) is not None:
            self.replies.feed(reply)
            if status := self.replies.take_status():
                return status
        return None

    def _drain_keeping(self) -> None:
        self.replies.feed(self._drain())
        self.replies.take_status()

    def _guarded(self, operation: Callable[[], T]) -> T:
        self.open()
        try:
            return operation()
        except StatusUnavailableError:
            raise
        except PrinterLinkError:
            self.close()
            raise
        except OSError as error:
            self.close()
            raise self._link_error(error) from error
        except Exception as error:
            self.close()
            raise self._unexpected(error) from error

    def _unexpected(self, error: Exception) -> PrinterLinkError:
        # pyusb raises ValueError for an unknown endpoint, escpos its own
        # exception types: whatever a library throws, callers see one type.
        logger.warning("%s: unexpected %s", self.description, type(error).__name__, exc_info=True)
        return PrinterLinkError(f"{self.description}: {type(error).__name__}: {error}")

    def _link_error(self, error: OSError) -> PrinterLinkError:
        """Turn an OS or library error into a PrinterLinkError with a useful message."""
        if isinstance(error, TimeoutError):
            return PrinterTimeoutError(f"{self.description}: timed out after {self.timeout_s} s")
        return PrinterLinkError(f"{self.description}: {error}")

    @abstractmethod
    def _open_device(self) -> None:
        """Connect; raise PrinterLinkError (or OSError) when the printer is not there."""

    @abstractmethod
    def _write(self, data: bytes) -> None:
        """Send all of data, or raise."""

    @abstractmethod
    def _drain(self) -> bytes:
        """Read the bytes already waiting, without blocking."""

    def _wait_readable(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for reply bytes; links that can poll return when they come."""
        time.sleep(timeout_s)

    @abstractmethod
    def _read_reply(self) -> bytes | None:
        """Wait up to the timeout for reply bytes; None when nothing came."""

    @abstractmethod
    def _close_device(self) -> None:
        """Release the connection."""
