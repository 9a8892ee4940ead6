"""Coordinator settings: one typed object, read from TOML then the environment.

Precedence (highest first): keyword arguments, `BADGELINE_*` environment
variables, the TOML file, the defaults below. Every option is documented in
docs/config.md; an invalid value stops start-up with the key that is wrong.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from badgeline.protocol.ids import POOL_NAME_PATTERN, PRINTER_ID_PATTERN
from badgeline.toml_env import ConfigError, load_toml_env  # noqa: F401  (ConfigError: this API)

ENV_PREFIX = "BADGELINE_"

# `metrics`: a Prometheus server's token, which reads GET /metrics and nothing else.
Role = Literal["kiosk", "agent", "operator", "metrics"]


class TokenEntry(BaseModel):
    """An API token, stored only as its SHA-256 (see `badgeline hash-token`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, description="who holds it, e.g. kiosk-hall-a")
    role: Role
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    printer_id: str | None = Field(default=None, pattern=PRINTER_ID_PATTERN)
    daily_quota: int | None = Field(
        default=None, ge=1, le=10_000_000, description="a kiosk's own kiosk_daily_quota"
    )
    # Kiosks of one group (the desks of one hall) see and cancel each other's jobs;
    # without one a kiosk sees only the jobs submitted with its own token name.
    group: str | None = Field(
        default=None, pattern=POOL_NAME_PATTERN, description="kiosks sharing their jobs"
    )

    @model_validator(mode="after")
    def agent_tokens_name_their_printer(self) -> TokenEntry:
        if self.role == "agent" and self.printer_id is None:
            raise ValueError(f"agent token {self.name!r} needs printer_id")
        if self.role != "agent" and self.printer_id is not None:
            raise ValueError(f"only agent tokens take printer_id ({self.name!r})")
        if self.role != "kiosk" and self.daily_quota is not None:
            raise ValueError(f"only kiosk tokens take daily_quota ({self.name!r})")
        if self.role != "kiosk" and self.group is not None:
            raise ValueError(f"only kiosk tokens take group ({self.name!r})")
        return self


class WebhookTarget(BaseModel):
    """A receiver of job events by signed HTTP POST (docs/api.md, "Webhooks")."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=POOL_NAME_PATTERN, description="names its delivery position")
    url: str = Field(max_length=2048, description="http(s):// URL each event is POSTed to")
    secret: SecretStr | None = Field(default=None, description="the HMAC-SHA256 key")
    secret_file: Path | None = Field(default=None, description="a file holding the key")
    kiosks: list[str] | None = Field(
        default=None, description="only jobs these kiosk tokens submitted; unset: every job"
    )

    @field_validator("url")
    @classmethod
    def url_is_http(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        return url

    @model_validator(mode="after")
    def one_secret_of_16_or_more(self) -> WebhookTarget:
        if (self.secret is None) == (self.secret_file is None):
            raise ValueError(f"webhook {self.name!r}: set secret or secret_file (one of them)")
        if self.secret_file is not None and not self.secret_file.is_file():
            raise ValueError(f"webhook {self.name!r}: no file {self.secret_file} (secret_file)")
        if len(self.secret_bytes()) < 16:
            raise ValueError(f"webhook {self.name!r}: the secret needs 16 characters or more")
        return self

    def secret_bytes(self) -> bytes:
        if self.secret is not None:
            return self.secret.get_secret_value().encode("utf-8")
        assert self.secret_file is not None  # one of the two, validated above
        return self.secret_file.read_text(encoding="utf-8").strip().encode("utf-8")


class CoordinatorSettings(BaseModel):
    # Loaded by load_coordinator_settings: the TOML file, then BADGELINE_* variables.
    model_config = ConfigDict(extra="forbid", validate_default=True)

    listen_host: str = "127.0.0.1"
    listen_port: int = Field(default=8420, ge=0, le=65535)
    venue: str = Field(default="default", pattern=POOL_NAME_PATTERN)
    redis_url: str | None = Field(
        default=None,
        description="redis[s]://[user:password@]host:port/db of an external server (for"
        " sentinel: the master's name as host); unset = embedded server",
    )
    redis_password_file: Path | None = Field(
        default=None,
        description="a file holding the password of redis_url's user (e.g. a systemd"
        " credential, %d/redis-password): the password stays out of the config and off"
        " every command line",
    )
    # Redis Cluster and Sentinel (docs/config.md, "Redis Cluster and Sentinel";
    # badgeline/coordinator/store/connection.py).
    redis_mode: Literal["standalone", "cluster", "sentinel"] = "standalone"
    redis_cluster_nodes: list[str] = Field(
        default_factory=list, description="host:port of more cluster nodes to start from"
    )
    redis_sentinels: list[str] = Field(
        default_factory=list, description="host:port of each sentinel (redis_mode sentinel)"
    )
    redis_sentinel_master: str | None = Field(
        default=None, min_length=1, description="the master's name in the sentinels' config"
    )
    redis_sentinel_password_file: Path | None = Field(
        default=None,
        description="a file holding the sentinels' own password (their requirepass), when"
        " they ask for one; the sentinels speak TLS when redis_url is rediss://",
    )
    # Concurrent Redis commands per process (per node on a cluster). A request
    # beyond it waits for a free connection (up to redis_pool_wait_s, then 503)
    # instead of failing: at a few hundred printers, heartbeats, long-poll
    # leases and kiosk submits easily have more than redis-py's 100 in flight.
    redis_max_connections: int = Field(default=512, ge=8, le=10_000)
    redis_pool_wait_s: float = Field(default=5.0, gt=0, le=60)
    state_dir: Path = Path("var/coordinator")
    embedded_appendfsync: Literal["always", "everysec"] = "always"

    dedupe_window_s: int = Field(default=6 * 3600, ge=60)
    # Retention (docs/config.md, "Retention and the audit export"; control/retention.py):
    # a closed job leaves Redis this long after it closed, once its record is on disk.
    job_retention_s: int = Field(default=7 * 24 * 3600, ge=1, le=366 * 24 * 3600)
    retention_sweep_interval_s: float = Field(default=60.0, gt=0, le=3600)
    audit_dir: Path | None = Field(
        default=None, description="where retired jobs are written; unset = state_dir/audit"
    )
    audit_file_max_bytes: int = Field(default=64 * 1024 * 1024, ge=64 * 1024, le=2**40)
    high_water_mark: int = Field(default=200, ge=1, le=100_000)
    lease_ttl_s: float = Field(default=30.0, gt=0.5, le=3600)
    lease_max_wait_s: float = Field(default=30.0, ge=0, le=120)
    lease_max_jobs: int = Field(default=4, ge=1, le=50)
    lease_scan_interval_s: float = Field(default=1.0, gt=0, le=60)
    max_attempts: int = Field(default=5, ge=1, le=100)
    uncertain_policy: Literal["reprint", "hold"] = "reprint"
    heartbeat_interval_s: float = Field(default=1.0, gt=0, le=60)
    fail_threshold: int = Field(default=3, ge=1, le=100)
    recover_after_healthy: int = Field(default=3, ge=1, le=100)
    monitor_interval_s: float = Field(default=0.1, gt=0, le=10)
    ack_grace_s: float = Field(default=10.0, ge=0, le=3600)
    failover_policy: Literal["reprint", "hold"] = "reprint"
    spill_named_targets: bool = True
    retry_backoff_unit_s: float = Field(default=1.0, gt=0, le=60)
    retry_backoff_cap_s: float = Field(default=60.0, gt=0, le=3600)
    # Shapes checked: a typo (`printer_a1`, `Hall A`) could never be routed to.
    pools: dict[
        Annotated[str, Field(pattern=POOL_NAME_PATTERN)],
        list[Annotated[str, Field(pattern=PRINTER_ID_PATTERN)]],
    ] = Field(
        default_factory=dict, description="pool name -> printer ids; `auto` uses pool default"
    )

    # A job naming a printer no agent has reported and nothing here names is refused
    # (422 unknown_printer): a typo (`printer-0l`) would otherwise wait for ever.
    known_printers: list[Annotated[str, Field(pattern=PRINTER_ID_PATTERN)]] = Field(
        default_factory=list,
        description="printers jobs may name before their agent's first heartbeat",
    )
    accept_unknown_printers: bool = Field(
        default=False, description="accept jobs for any well-shaped printer id, reported or not"
    )

    artifact_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    artifact_ttl_s: int = Field(default=24 * 3600, ge=60)
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    tokens: list[TokenEntry] = Field(default_factory=list)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    mdns: bool = Field(default=True, description="advertise the API and browse agents by mDNS")
    mdns_interfaces: list[str] | None = Field(
        default=None, description="addresses to run mDNS on; unset = the listen address's"
    )

    # Callers' limits, slow clients, TLS and enrolment (docs/config.md, "Limits, TLS and
    # enrolment"; coordinator/api/ratelimit.py, tls.py, enrolment.py).
    kiosk_rate_per_s: float | None = Field(default=None, gt=0, le=10_000)
    kiosk_burst: int = Field(default=20, ge=1, le=100_000)
    kiosk_daily_quota: int | None = Field(default=None, ge=1, le=10_000_000)
    agent_max_long_polls: int = Field(default=32, ge=1, le=1000)
    client_idle_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    body_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    enrolment_code_ttl_s: int = Field(default=24 * 3600, ge=60, le=30 * 24 * 3600)
    # Where secrets are guessed (POST /v1/enrol, the dashboard sign-in): attempts per
    # client address, shared by every replica (api/attempts.py). A success gives its
    # attempt back, so only refused guesses use up the allowance.
    credential_attempts_per_min: float = Field(default=6.0, gt=0, le=100_000)
    credential_attempts_burst: int = Field(default=10, ge=1, le=100_000)

    # Job events and webhooks (docs/config.md, "Job events and webhooks"; store/events.py,
    # control/event_hub.py, control/webhooks.py), and job deadlines (expire_after_s).
    event_retention_s: int = Field(default=24 * 3600, ge=60, le=30 * 24 * 3600)
    event_keepalive_s: float = Field(default=15.0, gt=0, le=300)
    event_streams_per_caller: int = Field(default=8, ge=1, le=10_000)
    webhooks: list[WebhookTarget] = Field(default_factory=list)
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=120)
    webhook_max_attempts: int = Field(default=12, ge=1, le=100)
    webhook_backoff_unit_s: float = Field(default=1.0, gt=0, le=600)
    webhook_backoff_cap_s: float = Field(default=300.0, gt=0, le=6 * 3600)
    webhook_concurrency: int = Field(default=8, ge=1, le=256)
    expiry_sweep_interval_s: float = Field(default=1.0, gt=0, le=3600)

    @field_validator("tls_cert_file", "tls_key_file")
    @classmethod
    def tls_file_exists(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"{path} does not exist")
        return path

    @field_validator("redis_url")
    @classmethod
    def redis_url_has_a_scheme(cls, url: str | None) -> str | None:
        # redis-py's own error for `localhost:6379` came as a traceback at start.
        if url is not None and urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ValueError("must start redis://, rediss:// or unix:// (redis://host:6379/0)")
        return url

    @property
    def audit_directory(self) -> Path:
        """Where the audit export of retired jobs goes (control/audit_export.py)."""
        return self.audit_dir if self.audit_dir is not None else self.state_dir / "audit"

    def redis_url_with_password(self, url: str | None) -> str | None:
        """`url` with the password of `redis_password_file` in it, when one is set."""
        if url is None or self.redis_password_file is None:
            return url
        password = self.redis_password_file.read_text(encoding="utf-8").strip()
        parts = urlsplit(url)
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"
        return urlunsplit(parts._replace(netloc=netloc))

    @field_validator("redis_password_file", "redis_sentinel_password_file")
    @classmethod
    def password_file_is_readable(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"{path} does not exist (or is not a file)")
        return path

    @field_validator("mdns_interfaces")
    @classmethod
    def mdns_interfaces_are_ipv4_addresses(cls, addresses: list[str] | None) -> list[str] | None:
        for address in addresses or []:  # an interface name (`eth0`) crashed start-up
            try:
                ipaddress.IPv4Address(address)
            except ValueError:
                raise ValueError(f"{address!r} is not an IPv4 address") from None
        return addresses

    @field_validator("redis_cluster_nodes", "redis_sentinels")
    @classmethod
    def addresses_are_host_port(cls, addresses: list[str]) -> list[str]:
        for address in addresses:
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{address!r} is not host:port")
        return addresses

    @model_validator(mode="after")
    def redis_mode_has_what_it_needs(self) -> CoordinatorSettings:
        mode = self.redis_mode
        if mode == "cluster" and self.redis_url is None:
            # The embedded server is one node; a cluster is run by the operator.
            raise ValueError("redis_mode cluster needs redis_url (one node of the cluster)")
        if mode == "cluster" and urlsplit(self.redis_url or "").path.strip("/") not in ("", "0"):
            raise ValueError("a Redis Cluster has only database 0: drop the /<db> of redis_url")
        if mode == "sentinel" and (not self.redis_sentinels or not self.redis_sentinel_master):
            raise ValueError("redis_mode sentinel needs redis_sentinels and redis_sentinel_master")
        if mode == "sentinel" and self.redis_url is not None:
            # Here redis_url carries what a connection to the master needs (TLS with
            # rediss://, user and password, the database) and names the master as its
            # host: the sentinels say where it is.
            named = urlsplit(self.redis_url).hostname
            if named != self.redis_sentinel_master:
                raise ValueError(
                    "with redis_mode sentinel, redis_url names the master as its host: "
                    f"redis://user:password@{self.redis_sentinel_master}/0"
                )
        if mode != "cluster" and self.redis_cluster_nodes:
            raise ValueError("redis_cluster_nodes is only used with redis_mode cluster")
        if mode != "sentinel" and (
            self.redis_sentinels or self.redis_sentinel_master or self.redis_sentinel_password_file
        ):
            raise ValueError("redis_sentinels is only used with redis_mode sentinel")
        if self.redis_password_file is not None and self.redis_url is None:
            raise ValueError(
                "redis_password_file goes with redis_url (the embedded server"
                " keeps its own password)"
            )
        return self

    @model_validator(mode="after")
    def one_token_one_entry(self) -> CoordinatorSettings:
        # The authority keeps one entry per hash: a copied entry renamed without a
        # new hash silently gave the first holder the second one's name and role.
        seen: dict[str, str] = {}
        for entry in self.tokens:
            if entry.sha256 in seen:
                raise ValueError(
                    f"tokens {seen[entry.sha256]!r} and {entry.name!r} have the same sha256: "
                    "give each its own token (`badgeline hash-token`)"
                )
            seen[entry.sha256] = entry.name
        return self

    @model_validator(mode="after")
    def one_kiosk_name_one_group(self) -> CoordinatorSettings:
        # A kiosk is its token name (its jobs, limits and quota): two tokens of one
        # name in two groups would make the group of a job depend on the token used.
        groups: dict[str, str | None] = {}
        for entry in self.tokens:
            if entry.role != "kiosk":
                continue
            if entry.name in groups and groups[entry.name] != entry.group:
                raise ValueError(
                    f"kiosk tokens named {entry.name!r} are in different groups "
                    f"({groups[entry.name]!r}, {entry.group!r}): give them one group"
                )
            groups[entry.name] = entry.group
        return self

    @model_validator(mode="after")
    def webhooks_name_known_kiosks(self) -> CoordinatorSettings:
        # A typo in a name would deliver nothing, silently.
        kiosks = {entry.name for entry in self.tokens if entry.role == "kiosk"}
        names: set[str] = set()
        for target in self.webhooks:
            if target.name in names:
                raise ValueError(f"two webhooks are named {target.name!r}: give each its own name")
            names.add(target.name)
            unknown = sorted(set(target.kiosks or ()) - kiosks)
            if unknown:
                raise ValueError(f"webhook {target.name!r} names kiosks no kiosk token has: "
                                 f"{', '.join(unknown)}")  # fmt: skip
        return self

    @model_validator(mode="after")
    def tls_needs_both_files(self) -> CoordinatorSettings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("set both tls_cert_file and tls_key_file, or neither")
        return self

    def names_printer(self, printer_id: str) -> bool:
        """Whether the config itself names this printer (known_printers or a pool), so
        that jobs may name it before its agent has reported."""
        return (
            self.accept_unknown_printers
            or printer_id in self.known_printers
            or any(printer_id in members for members in self.pools.values())
        )

    def mdns_interface_list(self) -> list[str] | None:
        """mDNS on the address we serve on: loopback-only coordinators stay loopback-only."""
        if self.mdns_interfaces is not None:
            return self.mdns_interfaces
        if self.listen_host in ("0.0.0.0", "", "::"):
            return None
        return [self.listen_host]


def load_coordinator_settings(path: Path | None = None, **overrides: Any) -> CoordinatorSettings:
    """Read and validate the settings once, at start-up."""
    return load_toml_env(CoordinatorSettings, path, ENV_PREFIX, **overrides)
