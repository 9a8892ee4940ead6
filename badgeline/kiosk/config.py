"""The kiosk's settings, typed and checked when the Kiosk is made.

Every setting can be given to `Kiosk(...)` as a keyword argument; docs/kiosk.md
lists them. A mistake (no coordinator, a URL with a path, an unreadable CA
file) fails at construction with the field named, not at the first scan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# A prefix is part of every idempotency key this kiosk makes: one per desk keeps keys
# apart when several kiosks share a venue (keys are venue-wide).
KEY_PREFIX_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,23}$"
DAY_S = 24 * 3600.0


class KioskSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    # Where the coordinator is: one URL, or one per replica (tried in turn when one
    # cannot be reached), and/or found on mDNS (`discover`).
    coordinator_urls: tuple[str, ...] = ()
    token: str = Field(min_length=1, description="the kiosk token (role kiosk)")
    outbox_path: Path
    # A venue CA for an HTTPS coordinator (docs/venue-setup.md); None: the system's.
    ca_file: Path | None = None
    discover: bool = False
    venue: str | None = Field(default=None, description="the venue to follow on mDNS")
    mdns_interfaces: tuple[str, ...] | None = None
    key_prefix: str = Field(default="scan", pattern=KEY_PREFIX_PATTERN)
    connect_timeout_s: float = Field(default=3.0, gt=0, le=60)
    request_timeout_s: float = Field(default=15.0, gt=0, le=300)
    # Back-off between attempts while the coordinator is away or refuses for now:
    # doubling from retry_base_s up to retry_max_s (a Retry-After answer wins).
    retry_base_s: float = Field(default=0.2, gt=0, le=60)
    retry_max_s: float = Field(default=5.0, gt=0, le=600)
    # Job states come from the coordinator's job event stream (GET /v1/events); while
    # it is down, or with follow_events off, each job not yet finished is read
    # (GET /v1/jobs/{id}) every poll_interval_s.
    follow_events: bool = True
    poll_interval_s: float = Field(default=1.0, gt=0, le=60)
    # A stream silent this long is taken for dead and opened again (the coordinator
    # sends a keep-alive every event_keepalive_s, 15 s by default).
    event_stream_idle_s: float = Field(default=45.0, gt=0, le=3600)
    # A corrupt outbox: "refuse" to start (the default, the file untouched), or
    # "salvage": move it aside and carry every readable scan into a fresh outbox.
    on_corrupt_outbox: Literal["refuse", "salvage"] = "refuse"
    # Finished scans (printed, canceled, failed, refused) are forgotten this long
    # after they finished; undelivered scans are never forgotten.
    keep_finished_s: float = Field(default=7 * DAY_S, ge=0)
    # The largest badge PDF accepted (the coordinator's artifact_max_bytes default).
    max_pdf_bytes: int = Field(default=5 * 1024 * 1024, gt=0)

    @field_validator("coordinator_urls", mode="before")
    @classmethod
    def one_url_or_several(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("coordinator_urls")
    @classmethod
    def base_urls(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = []
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"{url!r}: a coordinator URL is http(s)://host:port")
            if parts.path.strip("/") or parts.query or parts.fragment:
                raise ValueError(f"{url!r}: give the coordinator's base URL, without a path")
            cleaned.append(f"{parts.scheme}://{parts.netloc}")
        return tuple(cleaned)

    @field_validator("ca_file")
    @classmethod
    def readable_ca(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"{path}: no such CA file")
        return path

    @model_validator(mode="after")
    def somewhere_to_deliver(self) -> KioskSettings:
        if not self.coordinator_urls and not self.discover:
            raise ValueError("give coordinator_urls, or discover=True to find it on mDNS")
        if self.retry_max_s < self.retry_base_s:
            raise ValueError("retry_max_s must be at least retry_base_s")
        return self
