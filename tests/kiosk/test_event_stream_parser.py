"""The kiosk reads a server-sent event stream as the HTML standard says a client does:
records end at a blank line, `data` lines join, `id` moves the last event id (with or
without data), `retry` sets the reconnection time, comments and unknown fields are
skipped, and lines may end in LF or CRLF."""

from __future__ import annotations

from badgeline.kiosk.sse import Dispatch, EventStreamParser


def read(text: str) -> tuple[list[Dispatch], EventStreamParser]:
    parser = EventStreamParser()
    dispatched = [d for line in text.splitlines(keepends=True) if (d := parser.feed(line))]
    return dispatched, parser


def test_the_coordinators_stream_reads_as_records() -> None:
    stream = (
        "retry: 2000\n\n"
        ": connected\nid: 1767600000000-0\n\n"
        'id: 1767600001234-0\nevent: job\ndata: {"job_id":"job_1"}\n\n'
        ": keep-alive\n\n"
        ": keep-alive\nid: 1767600009999-3\n\n"
    )
    dispatched, parser = read(stream)
    assert parser.retry_ms == 2000
    assert dispatched == [
        Dispatch("message", None, None),  # the retry record
        Dispatch("message", None, "1767600000000-0"),  # the resume point, no event
        Dispatch("job", '{"job_id":"job_1"}', "1767600001234-0"),
        Dispatch("message", None, "1767600001234-0"),  # a keep-alive keeps the id
        Dispatch("message", None, "1767600009999-3"),  # one that moves it
    ]


def test_data_lines_join_and_crlf_comments_and_unknown_fields_are_handled() -> None:
    dispatched, parser = read(
        "event: job\r\ndata:first\r\ndata: second\r\nfoo: bar\r\n:note\r\n\r\n"
        "retry: soon\r\nid: has\0nul\r\ndata\r\n\r\n"
    )
    assert dispatched == [Dispatch("job", "first\nsecond", None), Dispatch("message", "", None)]
    assert parser.retry_ms is None  # `retry` that is not digits is ignored
