"""Fetch a badge PDF by its reference: `file://`, `http(s)://` or `artifact://<sha256>.pdf`.

Every fetch is bounded: by size while the bytes stream in (a Content-Length
is a claim, not a limit), and by time (each request by `timeout_s`, the whole
preparation of a badge by the preparer's budget). A reference that cannot be
served is a `FetchRefused` with a classified reason (badgeline.protocol.failures)
and a short text written here: the job is acked `failed` with both, and the
agent carries on with the next badge. Nothing a badge source answers is
copied into that text, since a kiosk reads it back. A passing network problem
is retried a few times first, since a failed ack costs the job an attempt.

Only regular files are read. A reference may name anything on the Pi: a FIFO
(whose open would block for ever), a device (`/dev/zero` never ends), a
directory, a symlink loop. So the file is opened without blocking and without
becoming its controlling terminal, and `fstat` of that very descriptor
decides, before a byte is read.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import re
import stat
from collections.abc import Awaitable, Callable
from urllib.parse import unquote, urlsplit

from badgeline.agent.badge_threads import badge_thread
from badgeline.agent.http_client import (
    BodyTooLarge,
    HttpClient,
    HttpFailure,
    HttpResponse,
    RedirectRefused,
    TooManyRedirects,
)
from badgeline.agent.retry import Backoff
from badgeline.agent.sources import BadgeSources, SourceNotAllowed
from badgeline.protocol.failures import FailureReason

ARTIFACT_NAME = re.compile(r"^([0-9a-f]{64})\.pdf$")
# A passing network fault gets this many tries before the job is failed.
TRANSIENT_ATTEMPTS = 3
# Characters no file name of a badge contains: C0 controls and DEL. A NUL makes
# every OS call raise ValueError; CR/LF would forge lines in logs.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_NOT_A_FILE_ERRNOS = frozenset({errno.ELOOP, errno.EISDIR, errno.ENOTDIR, errno.ENXIO})
_BAD_NAME_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EINVAL})
_UNREADABLE_ERRNOS = frozenset({errno.EACCES, errno.EPERM})


class FetchRefused(Exception):
    """The badge PDF cannot be had: `reason` classifies why, `message` says it for people."""

    def __init__(self, reason: FailureReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class _TransientFetchError(Exception):
    """A fault worth one more try: connection refused or reset, timeout, 5xx."""

    def __init__(self, reason: FailureReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class BadgeFetcher:
    """Reads badge PDFs for one agent.

    `artifact_headers` carry the agent token, which the artifact store needs;
    plain http(s) references are fetched without them, so the token never
    leaves for another host. `coordinator_url` is None until mDNS finds the
    coordinator, and the agent updates it when the coordinator moves.
    """

    def __init__(
        self,
        http: HttpClient,
        *,
        sources: BadgeSources,
        coordinator_url: str | None,
        artifact_headers: dict[str, str],
        max_bytes: int,
        timeout_s: float = 15.0,
        retry_initial_s: float = 0.5,
    ) -> None:
        self.http = http
        self.sources = sources
        self.coordinator_url = coordinator_url.rstrip("/") if coordinator_url else None
        self.artifact_headers = dict(artifact_headers)
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.retry_initial_s = retry_initial_s

    async def fetch(self, ref: str) -> bytes:
        """The PDF's bytes, or `FetchRefused`."""
        if not isinstance(ref, str) or not ref:
            raise FetchRefused(FailureReason.BAD_REFERENCE, "the job has no badge reference")
        if _CONTROL.search(ref):
            raise FetchRefused(
                FailureReason.BAD_REFERENCE, "the badge reference contains control characters"
            )
        try:
            parts = urlsplit(ref)
        except ValueError:
            raise FetchRefused(
                FailureReason.BAD_REFERENCE, "the badge reference is not a URL"
            ) from None
        if parts.scheme == "file":
            return await self._read_file(ref)
        if parts.scheme in ("http", "https"):
            try:
                return await self._with_retries(lambda: self._download(ref, authorised=False))
            except SourceNotAllowed as why:
                self.sources.log_refusal(ref, why)
                raise _not_allowed() from None
        if parts.scheme == "artifact":
            return await self._fetch_artifact(ref)
        raise FetchRefused(
            FailureReason.BAD_REFERENCE,
            f"unsupported scheme {parts.scheme[:16]!r}: badge references are file, http(s)"
            " or artifact URLs",
        )

    # ------------------------------------------------------------ file://

    async def _read_file(self, ref: str) -> bytes:
        parts = urlsplit(ref)
        if parts.netloc not in ("", "localhost"):
            raise FetchRefused(
                FailureReason.BAD_REFERENCE, "file references must be local (file:///path)"
            )
        path = unquote(parts.path)
        if _CONTROL.search(path):
            raise FetchRefused(
                FailureReason.BAD_REFERENCE, "the file name contains control characters"
            )
        if not path.startswith("/") or ".." in path.split("/"):
            raise FetchRefused(
                FailureReason.BAD_REFERENCE,
                "file references name an absolute path without '..' segments",
            )
        try:
            real = await badge_thread(self.sources.allowed_file, path)
            return await badge_thread(self._read_regular_file, real)
        except SourceNotAllowed as why:
            self.sources.log_refusal(ref, why)
            raise _not_allowed() from None

    def _read_regular_file(self, real: str) -> bytes:
        try:
            # O_NOFOLLOW: `real` has no symlink left; one swapped in since is refused.
            fd = os.open(real, _OPEN_FLAGS | os.O_NOFOLLOW)
        except OSError as error:
            raise _file_refused(error) from None
        try:
            self.sources.check_opened(fd, real)
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise FetchRefused(
                    FailureReason.NOT_A_FILE,
                    f"the badge reference names a {_file_kind(mode)}, not a regular file",
                )
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb", closefd=True) as file:
                fd = -1
                data = file.read(self.max_bytes + 1)
        except OSError as error:
            raise _file_refused(error) from None
        finally:
            if fd >= 0:
                os.close(fd)
        self._check_size(len(data))
        return data

    # ------------------------------------------------------------ artifact://

    async def _fetch_artifact(self, ref: str) -> bytes:
        parts = urlsplit(ref)
        name = parts.netloc or parts.path.lstrip("/")
        match = ARTIFACT_NAME.match(name)
        if match is None:
            raise FetchRefused(
                FailureReason.BAD_REFERENCE, "artifact references are artifact://<sha256>.pdf"
            )
        data = await self._with_retries(lambda: self._download_artifact(name))
        if hashlib.sha256(data).hexdigest() != match.group(1):
            raise FetchRefused(
                FailureReason.HASH_MISMATCH,
                "the artifact served does not match the SHA-256 in its name",
            )
        return data

    async def _download_artifact(self, name: str) -> bytes:
        # Read the URL per attempt: a retry after the coordinator moved goes to its new address.
        if self.coordinator_url is None:
            raise _TransientFetchError(
                FailureReason.COORDINATOR_AWAY, "no coordinator found yet to fetch artifacts from"
            )
        return await self._download(f"{self.coordinator_url}/v1/artifacts/{name}", authorised=True)

    # ------------------------------------------------------------ http(s)://

    async def _download(self, url: str, *, authorised: bool) -> bytes:
        """GET a badge. The coordinator's artifact store (`authorised`) is trusted as it
        is and never redirects; any other host must pass the agent's badge sources, for
        the first URL and every redirect."""
        headers = self.artifact_headers if authorised else None
        try:
            # The limit holds while the bytes stream in: a larger body is never read whole.
            # Badge hosts may be slow to reach over venue Wi-Fi: the whole fetch
            # timeout applies to connecting too, not the coordinator's short one.
            response = await self.http.request(
                "GET", url, headers=headers, timeout_s=self.timeout_s, max_body=self.max_bytes,
                connect_timeout_s=self.timeout_s, follow_redirects=not authorised,
                address_for=None if authorised else self.sources.address_for,
            )  # fmt: skip
        except BodyTooLarge:
            raise self._too_large() from None
        except TooManyRedirects:
            raise FetchRefused(
                FailureReason.REFUSED, "the badge server redirects in a loop"
            ) from None
        except RedirectRefused:
            raise FetchRefused(
                FailureReason.REFUSED, "the badge server redirects away from http(s)"
            ) from None
        except TimeoutError:
            raise _TransientFetchError(
                FailureReason.FETCH_TIMEOUT,
                f"the badge server did not answer within {self.timeout_s:g} s",
            ) from None
        except (HttpFailure, OSError):
            raise _TransientFetchError(
                FailureReason.NETWORK, "the badge server could not be reached"
            ) from None
        if response.status != 200:
            _refuse_status(response)
        return response.body

    async def _with_retries(self, attempt: Callable[[], Awaitable[bytes]]) -> bytes:
        backoff = Backoff(self.retry_initial_s, self.retry_initial_s * 4)
        for number in range(1, TRANSIENT_ATTEMPTS + 1):
            try:
                return await attempt()
            except _TransientFetchError as error:
                if number == TRANSIENT_ATTEMPTS:
                    raise FetchRefused(
                        error.reason, f"{error.message} ({TRANSIENT_ATTEMPTS} attempts)"
                    ) from None
                await asyncio.sleep(backoff.next_delay())
        raise AssertionError("unreachable")

    def _check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise self._too_large()

    def _too_large(self) -> FetchRefused:
        return FetchRefused(
            FailureReason.TOO_LARGE, f"the badge is larger than the {self.max_bytes}-byte limit"
        )


def _refuse_status(response: HttpResponse) -> None:
    status = response.status
    if status >= 500 or status == 429:
        raise _TransientFetchError(
            FailureReason.SERVER_ERROR, f"the badge server answered HTTP {status}"
        )
    if status in (404, 410):
        raise FetchRefused(FailureReason.NOT_FOUND, f"no badge there (HTTP {status})")
    raise FetchRefused(FailureReason.REFUSED, f"the badge server refused it (HTTP {status})")


def _not_allowed() -> FetchRefused:
    # One text for every refusal: a kiosk learns nothing of the Pi or the network from it.
    return FetchRefused(
        FailureReason.NOT_ALLOWED,
        "the badge reference is not among the sources this agent may fetch from",
    )


def _file_refused(error: OSError) -> FetchRefused:
    """What a failed open or read of a badge file means, without the OS's own words."""
    if error.errno == errno.ENOENT:
        return FetchRefused(FailureReason.NOT_FOUND, "no such badge file")
    if error.errno in _NOT_A_FILE_ERRNOS:
        what = "a symlink loop" if error.errno == errno.ELOOP else "no regular file"
        return FetchRefused(FailureReason.NOT_A_FILE, f"the badge reference names {what}")
    if error.errno in _BAD_NAME_ERRNOS:
        return FetchRefused(FailureReason.BAD_REFERENCE, "the badge file name cannot be used")
    if error.errno in _UNREADABLE_ERRNOS:
        return FetchRefused(FailureReason.UNREADABLE, "the badge file may not be read")
    return FetchRefused(FailureReason.UNREADABLE, "the badge file could not be read")


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"
