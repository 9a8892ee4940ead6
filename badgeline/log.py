"""Structured JSON log lines for every badgeline process: the forensic record
of every decision, one logger shared by the coordinator, agents and tools.

Each line is one JSON object with `event` (a stable snake_case name: job_enqueued,
duplicate_suppressed, queue_backpressure, …) and, for job events,
`correlation_id`, `job_id`, `idempotency_key` and `printer_id`.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

EVENT_LOGGER = "badgeline.events"
_logger = logging.getLogger(EVENT_LOGGER)
# json.dumps with any option (default=str here) builds a new encoder on every
# call, ~4 µs of each line's cost; one encoder, built once, writes the same text.
_LINE_ENCODER = json.JSONEncoder(default=str)


class JsonLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return _LINE_ENCODER.encode(line)


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The JSON lines carry none of these, and each costs every log call: the
    # caller's file and line (a stack walk), thread and process names.
    # (The logging HOWTO's "Optimization" section names these switches.)
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    # aiohttp's access log would double every request line; our events say more.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    _logger.log(level, event, extra={"fields": {"event": event, **fields}})


def job_event(
    event: str,
    *,
    job_id: str,
    printer_id: str,
    idempotency_key: str,
    correlation_id: str,
    level: int = logging.INFO,
    **fields: Any,
) -> None:
    log_event(
        event,
        level,
        job_id=job_id,
        printer_id=printer_id,
        idempotency_key=idempotency_key,
        correlation_id=correlation_id,
        **fields,
    )
