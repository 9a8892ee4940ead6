"""Agent settings: one typed object, read from TOML then the environment.

Precedence (highest first): keyword arguments, `BADGELINE_AGENT_*` environment
variables, the TOML file, the defaults below. Lists and tables take JSON, and
a table from the environment is merged into the file's:
`BADGELINE_AGENT_PRINTER='{"port": 9101}'` changes only the printer's port.
(`BADGELINE_AGENT_PRINTER__HOST=…` works for text values; the printer models
are strict, so numbers need the JSON form.)
An invalid value stops start-up with the key that is wrong.

A minimal `agent.toml`::

    printer_id = "printer-a"
    coordinator_url = "http://venue-server:8420"   # or leave it out: found by mDNS
    enrolment_code = "…"              # exchanged once for an agent token (or: token = "…")
    state_dir = "/var/lib/badgeline"  # the journal lives here

    [printer]                         # one of the printers.connection kinds
    kind = "network"
    host = "10.0.0.21"

Every option, with its default: docs/config.md ("Agent").
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from badgeline.agent.printers._escpos import profile_width
from badgeline.agent.printers.checks import check_printer_settings
from badgeline.agent.printers.connection import PrinterConnection
from badgeline.badge.limits import BadgeLimits
from badgeline.protocol.ids import POOL_NAME_PATTERN, PRINTER_ID_PATTERN
from badgeline.toml_env import ConfigError, load_toml_env  # noqa: F401  (ConfigError: this API)

DEFAULT_WIDTH_DOTS = 576  # 80 mm paper at 203 dpi; 58 mm printers have 384
JOURNAL_FILE_NAME = "journal.sqlite3"
# The agent token obtained by enrolment, mode 0600 (badgeline/agent/enrolment.py).
TOKEN_FILE_NAME = "agent-token.json"
ENROLMENT_CODE_PATTERN = r"^[A-Za-z0-9_-]{16,64}$"  # as the coordinator's /v1/enrol takes it
MAX_AGENT_ID = 64  # HeartbeatRequest.agent_id's limit
DEFAULT_STATUS_PORT = 8421
_POOL_NAME = re.compile(POOL_NAME_PATTERN)


def _hostname() -> str:
    return (socket.gethostname() or "badgeline-agent")[:MAX_AGENT_ID]


ENV_PREFIX = "BADGELINE_AGENT_"


class AgentSettings(BaseModel):
    """Everything an agent needs to know; every option is documented by its description.

    A plain model: `load_agent_settings` reads the file and the environment
    (badgeline/toml_env.py); constructing it directly takes only its arguments.
    """

    # validate_default: as pydantic-settings did, the defaults are checked too.
    model_config = ConfigDict(extra="forbid", validate_default=True)

    # ------------------------------------------------------------ identity and coordinator
    printer_id: str = Field(pattern=PRINTER_ID_PATTERN, description="the printer this agent runs")
    agent_id: str = Field(
        default_factory=_hostname,
        min_length=1,
        max_length=MAX_AGENT_ID,
        description="names this agent in heartbeats; defaults to the host name",
    )
    coordinator_url: str | None = Field(
        default=None,
        description="http(s)://host:port of the coordinator; unset: found (and followed) by mDNS",
    )
    venue: str | None = Field(
        default=None,
        pattern=POOL_NAME_PATTERN,
        description="with mDNS: follow only this venue's coordinator (two halls, one network)",
    )
    token: SecretStr | None = Field(
        default=None,
        description="the agent token bound to printer_id; unset: obtained with enrolment_code",
    )
    enrolment_code: SecretStr | None = Field(
        default=None,
        description="one-time code exchanged at first start for an agent token kept in state_dir",
    )
    coordinator_ca_file: Path | None = Field(
        default=None,
        description="PEM CA bundle trusted for an https coordinator; unset: the system's CAs",
    )
    labels: list[str] = Field(
        default_factory=list, max_length=16, description="pools this printer serves"
    )

    # ------------------------------------------------------------ local state and status
    state_dir: Path = Field(default=Path("var/agent"), description="the journal lives here")
    status_host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="address the status endpoint listens on (0.0.0.0: every interface)",
    )
    status_port: int = Field(
        default=DEFAULT_STATUS_PORT,
        ge=0,
        le=65535,
        description="port of the status endpoint (/healthz, /status, /test-print); 0: any free",
    )

    # ------------------------------------------------------------ mDNS
    mdns: bool = Field(
        default=True,
        description="advertise _badgeline-agent._tcp, and find the coordinator if no URL is set",
    )
    mdns_interfaces: list[str] | None = Field(
        default=None,
        description="IPv4 addresses of the interfaces mDNS uses; unset: every interface",
    )

    # ------------------------------------------------------------ the printer
    printer: PrinterConnection = Field(description="how to reach the printer (kind = …)")
    width_dots: int | None = Field(
        default=None,
        ge=8,
        le=2048,
        description=f"print width in dots; default {DEFAULT_WIDTH_DOTS} (80 mm), 384 for 58 mm",
    )
    escpos_profile: str | None = Field(
        default=None,
        min_length=1,
        description="a python-escpos printer profile (e.g. TM-T20II) to take the width from",
    )
    footer: bool = Field(
        default=True, description="print `job <job_id>` under the badge (traceability)"
    )
    badge_file_roots: list[Path] = Field(
        default_factory=list,
        max_length=32,
        description="folders file:// badge refs may be read from (symlinks resolved, regular"
        " files only); none by default: file refs are refused",
    )
    badge_http_hosts: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="hosts http(s):// badge refs (and their redirects) may fetch from: a name,"
        " *.domain, an address or a network, :port for another port; addresses that are not"
        " public only by address or network entry; the coordinator's artifact store is always"
        " allowed",
    )
    max_pdf_bytes: int = Field(
        default=5 * 1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="largest badge PDF fetched (counted while it streams in)",
    )
    max_pdf_pages: int = Field(
        default=4, ge=1, le=100, description="a PDF with more pages is refused (page 1 prints)"
    )
    render_in_sandbox: bool = Field(
        default=True,
        description="rasterise in a memory-capped child process (keep on: hostile PDFs exist)",
    )
    render_worker_idle_s: float = Field(
        default=600.0,
        ge=0,
        le=86400,
        description="the render worker exits after this long without a badge (the next badge"
        " starts it again, ~0.2 s more on this one); 0: start it with the agent and keep it",
    )
    print_confirmation: Literal[
        "auto", "process_id", "host_status", "print_completed", "status", "sent"
    ] = Field(
        default="auto",
        description="how a badge is confirmed printed: `process_id` waits for the printer's"
        " GS ( H answer (sent once the badge is on paper), `status` trusts a healthy status"
        " right after the bytes (printers without GS ( H), `auto` learns which from an"
        " ESC/POS printer and is a label printer's own word (`host_status`: a Zebra's ~HS,"
        " `print_completed`: a Brother QL's notice), `sent` is for write-only printers: they"
        " are asked nothing, a badge is confirmed once the printer took all of it",
    )
    print_pipeline_depth: int = Field(
        default=2,
        ge=1,
        le=4,
        description="badges sent to the printer before the first of them is confirmed (with"
        " GS ( H confirmation only): 2 sends the next badge while one prints; a fault leaves"
        " every badge in flight `uncertain`",
    )
    print_confirm_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=600,
        description="with process_id: longest wait for a badge to come out, once the printer has"
        " taken all of it, before it is uncertain; above the printer's time per badge (card"
        " printers take 30 s)",
    )

    # ------------------------------------------------------------ loops and timing
    heartbeat_interval_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="heartbeat interval until the coordinator's first answer sets its own",
    )
    probe_interval_s: float = Field(
        default=1.0, gt=0, le=60, description="how often the printer's status is queried"
    )
    lease_wait_s: float = Field(default=20.0, ge=0, le=120, description="lease long-poll wait")
    prefetch: int = Field(
        default=2, ge=1, le=50, description="jobs held at once: the printing one and the next"
    )
    connect_timeout_s: float = Field(
        default=3.0, gt=0, le=60, description="TCP connect timeout to the coordinator"
    )
    request_timeout_s: float = Field(
        default=10.0, gt=0, le=300, description="a coordinator call (beyond a lease's wait)"
    )
    fetch_timeout_s: float = Field(
        default=10.0, gt=0, le=300, description="one request for a badge PDF over http(s)"
    )
    badge_budget_s: float = Field(
        default=10.0,
        ge=1,
        le=300,
        description="the whole preparation of one badge (fetch with its retries, checks,"
        " render) or it fails as `fetch_timeout`; never more than half the job's lease",
    )
    retry_initial_s: float = Field(
        default=0.5, gt=0, le=60, description="first back-off delay of every retry loop"
    )
    retry_max_s: float = Field(
        default=15.0, gt=0, le=600, description="cap of every retry loop's back-off"
    )
    stop_grace_s: float = Field(
        default=10.0, ge=0, le=120, description="how long a stop lets the current badge finish"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="JSON lines on stderr at this level and above"
    )

    @field_validator("coordinator_url")
    @classmethod
    def require_http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an http:// or https:// URL with a host")
        return value.rstrip("/")

    @field_validator("mdns_interfaces")
    @classmethod
    def require_ipv4_addresses(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("list at least one address, or leave the key out for every interface")
        for address in value:
            try:
                ipaddress.IPv4Address(address)
            except ValueError:
                raise ValueError(f"{address!r} is not an IPv4 address") from None
        return value

    @field_validator("enrolment_code")
    @classmethod
    def require_code_shape(cls, value: SecretStr | None) -> SecretStr | None:
        # Checked here so a mistyped code stops start-up before it is sent (and
        # the message never repeats the code itself: it is a secret).
        if value is not None and not re.match(ENROLMENT_CODE_PATTERN, value.get_secret_value()):
            raise ValueError("must be the code the coordinator issued: 16-64 of A-Z a-z 0-9 _ -")
        return value

    @field_validator("coordinator_ca_file")
    @classmethod
    def require_readable_ca_bundle(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        if not value.is_file():
            raise ValueError(f"{value} does not exist (or is not a file)")
        try:
            ssl.create_default_context().load_verify_locations(cafile=str(value))
        except (OSError, ssl.SSLError) as error:
            raise ValueError(f"{value} is not a PEM CA bundle: {error}") from None
        return value

    @field_validator("badge_file_roots")
    @classmethod
    def require_absolute_roots(cls, roots: list[Path]) -> list[Path]:
        for root in roots:
            if not root.is_absolute():
                raise ValueError(f"{str(root)!r} is not an absolute path (badge_file_roots)")
        return roots

    @field_validator("badge_http_hosts")
    @classmethod
    def require_host_rules(cls, entries: list[str]) -> list[str]:
        from badgeline.agent.sources import HostRule

        for entry in entries:
            HostRule.parse(entry)  # raises ValueError with what is wrong
        return entries

    @field_validator("labels")
    @classmethod
    def require_pool_names(cls, labels: list[str]) -> list[str]:
        bad = [label for label in labels if not _POOL_NAME.match(label)]
        if bad:
            raise ValueError(f"labels must be pool names ({POOL_NAME_PATTERN}): {bad}")
        return labels

    @model_validator(mode="after")
    def one_width_source(self) -> AgentSettings:
        check_printer_settings(self.printer, self.printer.family(),
                               print_confirmation=self.print_confirmation,
                               width_dots=self.width_dots,
                               escpos_profile=self.escpos_profile)  # fmt: skip
        if self.width_dots is not None and self.escpos_profile is not None:
            raise ValueError("set width_dots or escpos_profile, not both")
        if self.escpos_profile is not None:
            profile_width(self.escpos_profile)  # fail at start-up, not at the first badge
        if self.retry_max_s < self.retry_initial_s:
            raise ValueError("retry_max_s must be at least retry_initial_s")
        if self.coordinator_url is None and not self.mdns:
            raise ValueError(
                "coordinator_url is not set and mdns is off: set coordinator_url (or"
                " BADGELINE_AGENT_COORDINATOR_URL), or turn mdns on to find the coordinator"
            )
        if self.token is None and self.enrolment_code is None and not self.token_path.exists():
            raise ValueError(
                "no agent token: set enrolment_code (a one-time code from the coordinator's"
                " operator: POST /v1/enrolment-codes) or token (an agent token for printer_id)"
            )
        return self

    # ------------------------------------------------------------ derived values

    @property
    def effective_width_dots(self) -> int:
        if self.width_dots is not None:
            return self.width_dots
        if self.escpos_profile is not None:
            return profile_width(self.escpos_profile)
        return DEFAULT_WIDTH_DOTS

    @property
    def journal_path(self) -> Path:
        return self.state_dir / JOURNAL_FILE_NAME

    @property
    def token_path(self) -> Path:
        """Where enrolment keeps the agent token it obtained (mode 0600)."""
        return self.state_dir / TOKEN_FILE_NAME

    @property
    def agent_token(self) -> str:
        """The token the agent sends; set by `token` or, after enrolment, from `token_path`."""
        if self.token is None:
            raise RuntimeError("the agent is not enrolled: no token yet (see agent/enrolment.py)")
        return self.token.get_secret_value()

    def client_ssl(self) -> ssl.SSLContext | None:
        """TLS for the agent's HTTP client: the system's CAs plus `coordinator_ca_file`.

        The system's stay trusted too: badge PDFs may come from other https hosts
        over the same connection pool.
        """
        if self.coordinator_ca_file is None:
            return None  # verify against the system trust store
        context = ssl.create_default_context()
        context.load_verify_locations(cafile=str(self.coordinator_ca_file))
        return context

    @property
    def badge_limits(self) -> BadgeLimits:
        return BadgeLimits(max_bytes=self.max_pdf_bytes, max_pages=self.max_pdf_pages)

    @property
    def printer_model(self) -> str:
        """What the mDNS advert says the printer is: its python-escpos profile or label
        printer model, if named."""
        return self.escpos_profile or self.printer.model or "unknown"


def load_agent_settings(path: Path | None = None, **overrides: Any) -> AgentSettings:
    """Read and validate the settings once, at start-up; ConfigError names what is wrong."""
    return load_toml_env(AgentSettings, path, ENV_PREFIX, "agent", **overrides)
