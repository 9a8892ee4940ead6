"""Reading a server-sent event stream line by line, as the HTML standard says a client
does ("Interpreting an event stream"), for the kiosk's job event stream.

Fed one line at a time (its end, LF or CRLF, may be left on), it answers a `Dispatch`
at each blank line: the record's event type and data (None when it had no `data`, as
the coordinator's `: connected` and keep-alive records), and the stream's last event
id, which any record with an `id` field moves, data or not. `retry` sets how long to
wait before reconnecting; comments (lines starting with `:`) and unknown fields are
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dispatch:
    event_type: str  # "message" when the record named none
    data: str | None  # None: a record without data, which dispatches no event
    last_event_id: str | None  # the stream's last event id once this record is read


class EventStreamParser:
    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self._data: list[str] = []
        self._event_type = ""
        self._record_started = False

    def feed(self, line: str) -> Dispatch | None:
        """One line of the stream; a Dispatch when it ends a record."""
        line = line.removesuffix("\n").removesuffix("\r")
        if not line:
            if not self._record_started:
                return None  # blank lines between records
            return self._dispatch()
        self._record_started = True
        if line.startswith(":"):
            return None  # a comment
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Dispatch:
        data = "\n".join(self._data) if self._data else None
        dispatched = Dispatch(self._event_type or "message", data, self.last_event_id)
        self._data, self._event_type, self._record_started = [], "", False
        return dispatched
