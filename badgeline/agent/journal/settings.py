"""Journal settings, validated once when the agent starts."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

DAY_S = 24 * 3600.0


class JournalSettings(BaseModel):
    """Where the journal lives and how hard it may work the SD card."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path = Field(description="the SQLite file; its directory is created if missing")
    busy_timeout_ms: int = Field(
        default=5000,
        ge=0,
        description="how long a statement waits for a lock held by another connection",
    )
    retention_s: float = Field(
        default=7 * DAY_S,
        gt=0,
        description="acked and dropped rows older than this are pruned",
    )
    max_finished_rows: int = Field(
        default=5000,
        ge=0,
        description=(
            "acked and dropped rows kept at most, newest first: a Pi without a real-time"
            " clock can boot with a wrong time, so age alone cannot bound the file"
        ),
    )
    max_size_bytes: int | None = Field(
        default=None,
        ge=64 * 1024,
        description=(
            "cap on the database size; a write past it fails like a full disk, so a"
            " runaway journal cannot fill the card the OS also lives on"
        ),
    )
    wal_autocheckpoint_pages: int = Field(
        default=1000,
        ge=1,
        description="WAL pages written before SQLite copies them back into the database",
    )
    wal_size_limit_bytes: int = Field(
        default=1024 * 1024,
        ge=0,
        description="the WAL file is truncated to this size after a checkpoint",
    )
