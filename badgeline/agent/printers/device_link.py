"""DeviceLink: a printer behind a device node such as /dev/usb/lp0.

ESC/POS to a device node is bytes written to a file, so this link writes them
itself rather than through python-escpos's ``File`` printer (whose import alone
costs the agent about half a second and 10 MB, see ``_escpos``). escpos's
``File.open()`` would also open the path write-only and blocking; both matter
at a registration desk:

- usblp allows one open of /dev/usb/lp0 at a time (EBUSY otherwise), so
  status replies must come back on the same descriptor: we open it
  read-write when the node allows it.
- A blocking write to a printer that is out of paper or switched off can
  wait forever; our writes wait at most ``timeout_s`` for the device to take
  more bytes, then fail.

Many device nodes cannot give status back: usblp answers ``read`` with EINVAL
when the printer is not bidirectional, a FIFO would hand us our own bytes, and
some nodes only allow opening for writing. Those links report
``can_read_status = False`` and the probe says the status is unknown.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import termios
import tty

from badgeline.agent.printers.connection import DeviceConnection
from badgeline.agent.printers.errors import (
    PrinterAccessError,
    PrinterLinkError,
    PrinterNotFoundError,
    PrinterTimeoutError,
    StatusUnavailableError,
)
from badgeline.agent.printers.link import MAX_DRAIN_READS, PrinterLink

_OPEN_FLAGS = os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# Opening read-write is refused on some nodes that still accept writes.
_WRITE_ONLY_FALLBACK = frozenset({errno.EACCES, errno.EPERM, errno.EINVAL, errno.EROFS})
# What read() says on a node that cannot answer (usblp without a bidirectional interface).
_CANNOT_READ = frozenset({errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF})
_READ_CHUNK = 64


def _wait_for(fd: int, events: int, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(fd, events)
    # Errors and hang-ups also end the wait: the next read or write reports them.
    return bool(poller.poll(timeout_s * 1000))


class DeviceFile:
    """A non-blocking descriptor whose writes wait at most ``timeout_s`` for the
    device to accept more bytes."""

    def __init__(self, fd: int, timeout_s: float) -> None:
        self._fd = fd
        self._timeout_s = timeout_s

    def fileno(self) -> int:
        return self._fd

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            if not _wait_for(self._fd, select.POLLOUT, self._timeout_s):
                raise TimeoutError(f"the device took no data for {self._timeout_s} s")
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                continue
            view = view[written:]
        return len(data)

    def close(self) -> None:
        os.close(self._fd)


def open_device_fd(path: str) -> tuple[int, bool]:
    """Open a printer node non-blocking; return the fd and whether status can be read on it."""
    mode = os.stat(path).st_mode
    if stat.S_ISCHR(mode):
        try:
            return os.open(path, os.O_RDWR | _OPEN_FLAGS), True
        except OSError as error:
            if error.errno not in _WRITE_ONLY_FALLBACK:
                raise
    # FIFOs and plain files: reading would hand back what we wrote ourselves.
    return os.open(path, os.O_WRONLY | _OPEN_FLAGS), False


class DeviceLink(PrinterLink):
    """A printer reached through a character device (or a FIFO, for tests and bridges)."""

    def __init__(self, connection: DeviceConnection) -> None:
        super().__init__(f"device printer {connection.path}")
        self.connection = connection
        self._file: DeviceFile | None = None
        self._readable = False

    @property
    def timeout_s(self) -> float:
        return self.connection.timeout_s

    @property
    def stall_timeout_s(self) -> float:
        return self.connection.stall_timeout_s

    @property
    def can_read_status(self) -> bool:
        return self._file is None or self._readable

    def _open_device(self) -> None:
        fd, self._readable = open_device_fd(self.connection.path)
        try:
            if os.isatty(fd):
                # A tty's line discipline would turn 0x0A into 0x0D 0x0A inside raster
                # data and echo bytes back as fake status replies: make it a clean pipe.
                tty.setraw(fd)
        except BaseException as error:
            os.close(fd)
            if isinstance(error, termios.error):
                raise PrinterLinkError(
                    f"{self.description}: cannot set raw mode: {error}"
                ) from error
            raise
        # Writes wait up to the stall timeout for the device to take more: a printer
        # with a full buffer takes data again once it has printed some (busy, not gone).
        self._file = DeviceFile(fd, self.connection.stall_timeout_s)

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        self._file.write(data)

    def _drain(self) -> bytes:
        drained = bytearray()
        for _ in range(MAX_DRAIN_READS):
            if not (data := self._read_available()):
                break
            drained += data
        return bytes(drained)

    def _wait_readable(self, timeout_s: float) -> None:
        assert self._file is not None
        _wait_for(self._file.fileno(), select.POLLIN, timeout_s)

    def _read_reply(self) -> bytes | None:
        assert self._file is not None
        if not _wait_for(self._file.fileno(), select.POLLIN, self.connection.timeout_s):
            return None
        return self._read_available() or None

    def _read_available(self) -> bytes:
        assert self._file is not None
        try:
            return os.read(self._file.fileno(), _READ_CHUNK)
        except BlockingIOError:
            return b""
        except OSError as error:
            if error.errno not in _CANNOT_READ:
                raise
            self._readable = False
            raise StatusUnavailableError(
                f"{self.description} cannot report status (read: {error.strerror})"
            ) from error

    def _link_error(self, error: OSError) -> PrinterLinkError:
        path = self.connection.path
        if isinstance(error, TimeoutError):
            return PrinterTimeoutError(f"{self.description}: {error}")
        if error.errno in (errno.ENOENT, errno.ENODEV):
            return PrinterNotFoundError(
                f"{path} does not exist: is the printer plugged in and switched on?"
            )
        if error.errno == errno.ENXIO:
            return PrinterNotFoundError(f"nothing is attached to {path} (no device or reader)")
        if error.errno in (errno.EACCES, errno.EPERM):
            return PrinterAccessError(
                f"{path}: permission denied; add the agent's user to the device's group "
                "(usually lp) or add a udev rule"
            )
        if error.errno == errno.EBUSY:
            return PrinterAccessError(f"{path} is busy: another program (CUPS?) has it open")
        return PrinterLinkError(f"{self.description}: {error}")

    def _close_device(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()
