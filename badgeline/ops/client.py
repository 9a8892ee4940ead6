"""HTTP calls to the coordinator with the standard library only: the CLI
starts fast and imports nothing of the coordinator's Redis stack."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8420"

# Exit codes: 1 the coordinator refused or a check failed, 2 bad usage
# (argparse's own), 3 the coordinator could not be reached at all.
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
# Items a page of a list holds when the CLI reads it whole (the API's most).
PAGE_LIMIT = 500

_HINTS = {
    401: "pass an operator token with --token or BADGELINE_TOKEN",
    403: "this command needs an operator token",
}


class OpsError(Exception):
    """One line for the operator, and the exit code that goes with it."""

    def __init__(self, message: str, exit_code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _named(loc: list[Any], flags: Mapping[str, str]) -> str:
    """A field of the API as the person typed it: `for_s` is `--for`."""
    path = ".".join(str(part) for part in loc)
    if not loc:
        return "(the request)"
    return flags.get(path) or flags.get(str(loc[0])) or path


def _describe_refusal(error: urllib.error.HTTPError, flags: Mapping[str, str]) -> str:
    raw = error.read()
    try:
        body = json.loads(raw)
        detail = body["error"]
        code, message = detail["code"], detail["message"]
        # What each bad field got wrong, named by its flag ("--for: Input should be
        # greater than 0"): the API's own message names the API's fields.
        fields = "; ".join(f"{_named(field['loc'], flags)}: {field['msg']}"
                           for field in detail.get("fields") or [])  # fmt: skip
        reason = body.get("reason") if code == "badge_rejected" else None
    except (ValueError, KeyError, TypeError, AttributeError):
        code, message, fields = error.reason, raw.decode("utf-8", "replace").strip()[:200], ""
        reason = None
    if code == "validation_failed" and fields:
        line = f"{error.code} {code}: {fields}"
    else:
        line = f"{error.code} {code}: {message}" + (f" ({fields})" if fields else "")
    if reason:
        line += f" (reason: {reason})"
    hint = _HINTS.get(error.code)
    return f"{line} ({hint})" if hint else line


@dataclass(frozen=True)
class OpsClient:
    url: str
    token: str | None
    timeout_s: float = 10.0
    # The command's flags by the API field they fill, to name them in a refusal.
    flags: Mapping[str, str] = field(default_factory=dict)

    def get(self, path: str, **query: Any) -> Any:
        given = {name: value for name, value in query.items() if value is not None}
        if given:
            path += "?" + urllib.parse.urlencode(given)
        return self._call("GET", path, None)

    def get_all(self, path: str, page_limit: int = PAGE_LIMIT, **query: Any) -> Any:
        """A list whole: `GET path` and every page after it (each page's `next` sent
        back as `after`). The answer is the first page's, holding every item."""
        first = self.get(path, limit=page_limit, **query)
        page = first
        while page.get("next"):
            page = self.get(path, limit=page_limit, after=page["next"], **query)
            first["items"] += page["items"]
        first["next"] = None
        return first

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        body = body if body is not None else {}
        return self._call("POST", path, json.dumps(body).encode("utf-8"), "application/json")

    def put(self, path: str, data: bytes, content_type: str) -> Any:
        return self._call("PUT", path, data, content_type)

    def _call(self, method: str, path: str, data: bytes | None,
              content_type: str | None = None) -> Any:  # fmt: skip
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if content_type is not None:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise OpsError(_describe_refusal(error, self.flags)) from None
        except urllib.error.URLError as error:
            reason = getattr(error.reason, "strerror", None) or str(error.reason)
            raise OpsError(self._unreachable(reason.lower()), EXIT_UNREACHABLE) from None
        except TimeoutError:
            raise OpsError(
                self._unreachable(f"no answer within {self.timeout_s:g} s"), EXIT_UNREACHABLE
            ) from None
        except (OSError, http.client.HTTPException) as error:
            # The request went out and the connection broke before the answer came
            # (urllib wraps only failures to send): whether it was done is unknown.
            raise OpsError(
                self._unreachable(f"the connection broke before an answer ({error!r})"),
                EXIT_UNREACHABLE,
            ) from None
        except ValueError as error:  # a body that is not JSON: not a coordinator
            raise OpsError(f"{self.url} did not answer like a coordinator: {error}") from None

    def _unreachable(self, why: str) -> str:
        return f"cannot reach the coordinator at {self.url}: {why} (check --url / BADGELINE_URL)"
