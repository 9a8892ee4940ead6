"""The kiosk library's log lines: one logger, one shape.

Each line is the event's name, then its fields as `key=value`; the same fields go
on the record as `fields`, so badgeline.log.JsonLineFormatter writes the line as one
JSON object, as every badgeline process logs.
"""

from __future__ import annotations

import logging

log = logging.getLogger("badgeline.kiosk")


def kiosk_event(event: str, level: int = logging.INFO, **fields: object) -> None:
    text = " ".join(f"{key}={value}" for key, value in fields.items())
    log.log(level, "%s %s", event, text, extra={"fields": {"event": event, **fields}})
