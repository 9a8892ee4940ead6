"""Fetch a badge PDF by its reference: `file://`, `http(s)://` or `artifact://<sha256>.pdf`.

Every fetch is bounded: by size while the bytes stream in (a Content-Length
is a claim, not a limit), and by time. A reference that cannot be served
(missing, too large, not a PDF, wrong hash) is a `FetchRefused` with a reason
for people: the job is then acked `failed` with it, and the agent carries on
with the next badge. A passing network problem is retried a few times first,
since a failed ack costs the job one of its attempts.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from badgeline.agent.http_client import BodyTooLarge, HttpClient, HttpFailure, HttpResponse
from badgeline.agent.retry import Backoff

ARTIFACT_NAME = re.compile(r"^([0-9a-f]{64})\.pdf$")
# A passing network fault gets this many tries before the job is failed.
TRANSIENT_ATTEMPTS = 3


class FetchRefused(Exception):
    """The badge PDF cannot be had; `reason` says why, for the job's error text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _TransientFetchError(Exception):
    """A fault worth one more try: connection refused or reset, timeout, 5xx."""


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
        coordinator_url: str | None,
        artifact_headers: dict[str, str],
        max_bytes: int,
        timeout_s: float = 15.0,
        retry_initial_s: float = 0.5,
    ) -> None:
        self.http = http
        self.coordinator_url = coordinator_url.rstrip("/") if coordinator_url else None
        self.artifact_headers = dict(artifact_headers)
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.retry_initial_s = retry_initial_s

    async def fetch(self, ref: str) -> bytes:
        """The PDF's bytes, or `FetchRefused`."""
        parts = urlsplit(ref)
        if parts.scheme == "file":
            return await self._read_file(ref)
        if parts.scheme in ("http", "https"):
            return await self._with_retries(ref, lambda: self._download(ref, authorised=False))
        if parts.scheme == "artifact":
            return await self._fetch_artifact(ref)
        raise FetchRefused(f"cannot fetch {ref!r}: unsupported scheme {parts.scheme!r}")

    # ------------------------------------------------------------ file://

    async def _read_file(self, ref: str) -> bytes:
        parts = urlsplit(ref)
        if parts.netloc not in ("", "localhost"):
            raise FetchRefused(f"{ref}: file references must be local (file:///path)")
        return await asyncio.to_thread(self._read_file_blocking, ref, Path(unquote(parts.path)))

    def _read_file_blocking(self, ref: str, path: Path) -> bytes:
        try:
            with path.open("rb") as file:
                data = file.read(self.max_bytes + 1)
        except FileNotFoundError:
            raise FetchRefused(f"{ref}: no such file") from None
        except OSError as error:
            raise FetchRefused(f"{ref}: cannot read: {error.strerror or error}") from None
        self._check_size(ref, len(data))
        return data

    # ------------------------------------------------------------ artifact://

    async def _fetch_artifact(self, ref: str) -> bytes:
        parts = urlsplit(ref)
        name = parts.netloc or parts.path.lstrip("/")
        match = ARTIFACT_NAME.match(name)
        if match is None:
            raise FetchRefused(f"{ref}: artifact references are artifact://<sha256>.pdf")
        data = await self._with_retries(ref, lambda: self._download_artifact(name))
        if hashlib.sha256(data).hexdigest() != match.group(1):
            raise FetchRefused(f"{ref}: the bytes served do not match the SHA-256 in the name")
        return data

    async def _download_artifact(self, name: str) -> bytes:
        # Read the URL per attempt: a retry after the coordinator moved goes to its new address.
        if self.coordinator_url is None:
            raise _TransientFetchError("no coordinator found yet to fetch artifacts from")
        return await self._download(f"{self.coordinator_url}/v1/artifacts/{name}", authorised=True)

    # ------------------------------------------------------------ http(s)://

    async def _download(self, url: str, *, authorised: bool) -> bytes:
        headers = self.artifact_headers if authorised else None
        try:
            # The limit holds while the bytes stream in: a larger body is never read whole.
            # Badge hosts may be slow to reach over venue Wi-Fi: the whole fetch
            # timeout applies to connecting too, not the coordinator's short one.
            response = await self.http.request(
                "GET", url, headers=headers, timeout_s=self.timeout_s, max_body=self.max_bytes,
                connect_timeout_s=self.timeout_s, follow_redirects=True,
            )  # fmt: skip
        except BodyTooLarge:
            raise self._too_large(url) from None
        except (HttpFailure, TimeoutError, OSError) as error:
            raise _TransientFetchError(f"{url}: {_describe(error)}") from error
        if response.status != 200:
            self._refuse_status(url, response)
        return response.body

    def _refuse_status(self, url: str, response: HttpResponse) -> None:
        detail = _error_message(response)
        if response.status >= 500 or response.status == 429:
            raise _TransientFetchError(f"{url}: HTTP {response.status} {detail}".rstrip())
        what = "not found" if response.status == 404 else "refused"
        raise FetchRefused(f"{url}: {what} (HTTP {response.status}) {detail}".rstrip())

    async def _with_retries(self, ref: str, attempt: Callable[[], Awaitable[bytes]]) -> bytes:
        backoff = Backoff(self.retry_initial_s, self.retry_initial_s * 4)
        for number in range(1, TRANSIENT_ATTEMPTS + 1):
            try:
                return await attempt()
            except _TransientFetchError as error:
                if number == TRANSIENT_ATTEMPTS:
                    raise FetchRefused(
                        f"could not fetch {ref} after {TRANSIENT_ATTEMPTS} attempts: {error}"
                    ) from None
                await asyncio.sleep(backoff.next_delay())
        raise AssertionError("unreachable")

    def _check_size(self, ref: str, size: int) -> None:
        if size > self.max_bytes:
            raise self._too_large(ref)

    def _too_large(self, ref: str) -> FetchRefused:
        return FetchRefused(f"{ref}: larger than the {self.max_bytes}-byte limit for a badge")


def _error_message(response: HttpResponse) -> str:
    """The coordinator's error message, if the body is its error shape; else nothing."""
    try:
        body = response.json()
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return f"- {error['message'][:200]}"
    return ""


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
