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
- Every blocking call is bounded. Status replies wait at most the
  connection's ``timeout_s``; writes go out in chunks and fail only when the
  printer takes none of them for ``stall_timeout_s``: a printer printing a
  long badge takes data slowly but steadily, and only one that stops fails.
- Library exceptions never leave a link: they become ``PrinterLinkError``.

Slow is not silent. A printer's receive buffer is small, and while it is
full the printer reads nothing more: TCP flow control (or a USB device that
NAKs) holds the agent's next bytes back, and a real-time status query sent
then waits behind them. Epson says DLE EOT is executed "even when the
receive buffer is full" only for serial models; a parallel one cannot
receive it while busy, and an Ethernet one takes real-time commands ahead of
the data only after a special UDP command (TM-T88III Specification, DLE EOT;
TM-U230 Specification, Appendix F "Notes on receiving real-time commands
while the printer is busy"). NCR's 7168 guide describes the same queue:
real-time commands are placed "behind any other data" and, while the printer
is merely busy, "eventually get flushed out" at print speed. So a link keeps
track of *progress*: when the printer last took any of the agent's bytes.
A printer that holds unread bytes of ours and took some within
``stall_timeout_s`` is busy (``is_busy``): its silence is not an answer. One
that took nothing for that long, or holds nothing and still does not answer
within ``timeout_s``, is gone.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from badgeline.agent.printers.errors import (
    PrinterBusyError,
    PrinterLinkError,
    PrinterTimeoutError,
    StatusUnavailableError,
)
from badgeline.agent.printers.replies import Replies, ReplySorter

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A printer that keeps sending unasked-for bytes is broken; stop draining after this many reads.
MAX_DRAIN_READS = 64
# Small enough that a slow but working printer takes a chunk well within any timeout.
WRITE_CHUNK = 4096
# A printer holding our bytes that takes none of them for this long is gone
# (switched off, cable out), unless its connection sets another bound.
DEFAULT_STALL_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class LinkIo:
    """The raw steps of an open link, lent to an exchange run by ``PrinterLink.converse``."""

    write: Callable[[bytes], None]  # send all of it, or raise
    receive: Callable[[], bytes]  # the reply bytes already waiting, without waiting
    drain: Callable[[], None]  # discard status bytes already waiting (responses are kept)
    # Wait up to the given seconds for reply bytes, returning as soon as some are
    # there (without reading them); a link that cannot tell just sleeps.
    wait: Callable[[float], None] = time.sleep
    # The link's replies (process ID responses, completion notices), kept across
    # operations until claimed.
    replies: Replies = field(default_factory=ReplySorter)
    # Whether the printer is busy taking our bytes (its silence is no answer yet).
    busy: Callable[[], bool] = lambda: False
    # Seconds since the printer last took any of our bytes (a question it has just
    # taken, behind a badge, is only now asked).
    quiet_s: Callable[[], float] = lambda: math.inf
    # How long a status reply may take from a printer that is not busy.
    timeout_s: float = 3.0


class PrinterLink(ABC):
    """One connection to one printer. Blocking and thread-safe."""

    def __init__(self, description: str) -> None:
        self.description = description
        self._lock = threading.RLock()
        self._is_open = False
        # How the printer's replies are read: its family's reader (ESC/POS by default).
        self.reply_factory: Callable[[], Replies] = ReplySorter
        # Replies read by any operation (process ID responses, completion notices),
        # until a wait claims them.
        self.replies: Replies = ReplySorter()
        # When the printer last took any of our bytes (monotonic), and whether a
        # write is under way: together, whether its silence means busy or gone.
        self._last_progress = time.monotonic()
        self._writing = False
        self._sent = 0  # bytes written on the current connection
        # A write-only printer (many cheap network printers and print servers): never
        # asked anything, its health comes from the link itself.
        self.write_only = False
        # Reply bytes read at once where a link reads in packets (USB): None, the
        # link's own (escpos's 16). A family whose replies come in larger packets (a
        # Brother QL's 32-byte status) sets more: libusb refuses a read shorter than
        # the packet that arrives.
        self.reply_chunk: int | None = None

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
    def stall_timeout_s(self) -> float:
        """How long the printer may take none of our bytes, holding some, before it is gone."""
        return DEFAULT_STALL_TIMEOUT_S

    @property
    def can_read_status(self) -> bool:
        """Whether status bytes can come back on this link; known once it is open."""
        return True

    @property
    def asks_status(self) -> bool:
        """Whether status queries go to this printer (not to a write-only one)."""
        return not self.write_only and self.can_read_status

    def still_connected(self) -> bool:
        """Whether the open connection still stands (a write-only printer's health);
        links that cannot tell say yes."""
        return True

    # ------------------------------------------------------------ progress

    def backlog(self) -> int:
        """Bytes written that the printer has not taken yet, where the link can tell (TCP)."""
        return 0

    def bytes_sent(self) -> int:
        """Bytes written on this connection so far."""
        return self._sent

    def bytes_taken(self) -> int:
        """Bytes of those the printer has taken (on USB and device nodes: every byte
        whose write returned; on TCP: every byte it acknowledged)."""
        return self._sent

    def observe_progress(self) -> None:  # noqa: B027  (most links learn progress by writing)
        """Look whether the printer took more of our bytes since the last look (no I/O)."""

    def note_progress(self) -> None:
        self._last_progress = time.monotonic()

    @property
    def last_progress_at(self) -> float:
        """When (time.monotonic) the printer last took any of our bytes, or answered."""
        self.observe_progress()
        return self._last_progress

    def is_busy(self) -> bool:
        """The printer holds bytes of ours it has not read, and took some recently.

        Safe from any thread without the link's lock: it only looks (an ioctl on
        TCP), so a status probe can ask it while a long write holds the lock.
        """
        self.observe_progress()
        holding = self._writing or self.backlog() > 0
        return holding and time.monotonic() - self._last_progress < self.stall_timeout_s

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
            self.replies = self.reply_factory()
            self._sent = 0
            self.note_progress()

    def write(self, data: bytes) -> None:
        """Send ESC/POS bytes; returns once the printer (or its buffer) has taken them all."""
        with self._lock:
            self._guarded(lambda: self._write_chunks(data))

    def write_marked(self, data: bytes, mark: Callable[[Replies], T]) -> T:
        """Send a badge; `mark` reads the replies just before its first byte, under the
        lock, so no status query can go out between the two (family.py: Mark)."""
        with self._lock:
            self.open()
            taken = mark(self.replies)
            self._guarded(lambda: self._write_chunks(data))
            return taken

    def read_status(self, query: bytes) -> bytes | None:
        """Send one real-time status query and return the reply, or None if none came in time.

        Stale bytes (a reply that arrived after an earlier query timed out) are
        discarded first, so the reply belongs to this query. `PrinterBusyError`
        instead of None while the printer is busy (see the module's notes): the
        query waits behind our own bytes, or a long write holds the link.
        """
        if not self._lock.acquire(timeout=self.timeout_s):
            if self.is_busy():
                raise PrinterBusyError(f"{self.description} is busy taking a badge")
            raise PrinterTimeoutError(f"{self.description}: a stalled write holds the link")
        try:
            self.open()
            if not self.asks_status:
                raise StatusUnavailableError(f"{self.description} cannot report status")
            reply = self._guarded(lambda: self._query(query))
            if reply is None and self.is_busy():
                raise PrinterBusyError(
                    f"{self.description} is busy printing: {self.backlog()} bytes not taken yet"
                )
            return reply
        finally:
            self._lock.release()

    def converse(self, exchange: Callable[[LinkIo], T]) -> T:
        """Run a multi-step exchange (e.g. waiting for a print completion) under the lock.

        No other query can read, or drain, its replies meanwhile. Errors are
        handled as for ``read_status``; a link that cannot read raises
        StatusUnavailableError.
        """
        with self._lock:
            self.open()
            if not self.asks_status:
                raise StatusUnavailableError(f"{self.description} cannot read replies")
            io = LinkIo(
                write=self._write,
                receive=self._drain,
                drain=self._drain_keeping,
                wait=self._wait_readable,
                replies=self.replies,
                busy=self.is_busy,
                quiet_s=lambda: time.monotonic() - self.last_progress_at,
                timeout_s=self.timeout_s,
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
        self._writing = True
        try:
            for start in range(0, len(data), WRITE_CHUNK):
                chunk = data[start : start + WRITE_CHUNK]
                self._write(chunk)
                self._chunk_taken(len(chunk))
        finally:
            self._writing = False

    def _chunk_taken(self, size: int) -> None:
        """A chunk write returned: on USB and device nodes the printer took it."""
        self._sent += size
        self.note_progress()

    def _query(self, query: bytes) -> bytes | None:
        self._drain_keeping()
        self._write(query)
        self.replies.asked(query)
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
