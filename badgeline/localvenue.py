"""A whole venue on one machine, as real processes: the coordinator with its
embedded Redis, printer emulators and agents. The demo runs one; end-to-end
tests and benchmarks use the same class so they exercise what people run."""

from __future__ import annotations

import json
import secrets
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.store.embedded import EmbeddedRedis, free_port
from badgeline.processes import ManagedProcess, stop_together

DEFAULT_PRINTERS = ("printer-a", "printer-b", "printer-c")


@dataclass
class PrinterSlot:
    printer_id: str
    port: int
    control_port: int
    status_port: int
    token: str


@dataclass
class LocalVenue:
    """`coordinator_count` > 1 runs that many coordinator processes at once on one
    Redis server the venue starts itself (as `shared_redis` does for one); agents
    talk to the first unless `agent_overrides` says otherwise. `agent_overrides`
    maps a printer id to settings laid over its agent's config (tables merge), e.g.
    `{"printer-b": {"coordinator_url": venue.coordinator_urls[1]}}`; a None value
    leaves the key out of the config. Ports left 0 are picked free; `emulator_port`
    pins the emulators' (two per printer from it: ESC/POS, then control) and
    `agent_status_port` the agents' status ports (one per printer from it)."""

    root: Path
    printer_ids: tuple[str, ...] = DEFAULT_PRINTERS
    coordinator_port: int = 0
    emulator_port: int = 0
    agent_status_port: int = 0
    extra_coordinator_config: dict[str, Any] = field(default_factory=dict)
    kiosk_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    operator_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    # A Prometheus server's token: GET /metrics only.
    metrics_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    processes: dict[str, ManagedProcess] = field(default_factory=dict)
    printers: dict[str, PrinterSlot] = field(default_factory=dict)
    coordinator_count: int = 1
    shared_redis: bool = False
    agent_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Printer id -> more `badgeline emulator` arguments, e.g. ["--language", "zpl"].
    emulator_args: dict[str, list[str]] = field(default_factory=dict)
    coordinator_ports: list[int] = field(default_factory=list)
    redis: EmbeddedRedis | None = None

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        self.coordinator_port = self.coordinator_port or free_port()
        self.coordinator_ports = [self.coordinator_port] + [
            free_port() for _ in range(self.coordinator_count - 1)
        ]
        self.shared_redis = self.shared_redis or self.coordinator_count > 1
        for n, printer_id in enumerate(self.printer_ids):
            pinned = self.emulator_port + 2 * n if self.emulator_port else 0
            self.printers[printer_id] = PrinterSlot(
                printer_id, pinned or free_port(), pinned + 1 if pinned else free_port(),
                self.agent_status_port + n if self.agent_status_port else 0,
                secrets.token_urlsafe(24),
            )  # fmt: skip

    def planned_ports(self) -> list[tuple[int, str, str]]:
        """Every port this venue will listen on: (port, part, what listens there), the
        part being coordinator, emulator or agent. An agent whose status port is 0
        binds a free one itself and is not listed."""
        names = ["the coordinator", *map(self.coordinator_name, range(1, self.coordinator_count))]
        ports = [(port, "coordinator", f"{name}'s API")
                 for name, port in zip(names, self.coordinator_ports, strict=True)]  # fmt: skip
        for slot in self.printers.values():
            ports += [(slot.port, "emulator", f"{slot.printer_id}'s emulator, ESC/POS"),
                      (slot.control_port, "emulator",
                       f"{slot.printer_id}'s emulator, control API")]  # fmt: skip
            if slot.status_port:
                ports.append((slot.status_port, "agent", f"{slot.printer_id}'s agent status"))
        return ports

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.coordinator_port}"

    @property
    def coordinator_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.coordinator_ports]

    @staticmethod
    def coordinator_name(index: int) -> str:
        """The process name of the index-th coordinator: coordinator, coordinator-2, …"""
        return "coordinator" if index == 0 else f"coordinator-{index + 1}"

    @property
    def badges_dir(self) -> Path:
        return self.root / "badges"

    # ------------------------------------------------------------ config files

    def _toml(self, values: dict[str, Any]) -> str:
        lines = []
        tables = []
        for key, value in values.items():
            if isinstance(value, dict):
                tables.append(f"\n[{key}]\n" + "\n".join(
                    f"{k} = {json.dumps(v)}" for k, v in value.items()))  # fmt: skip
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                for entry in value:
                    tables.append(f"\n[[{key}]]\n" + "\n".join(
                        f"{k} = {json.dumps(v)}" for k, v in entry.items()))  # fmt: skip
            else:
                lines.append(f"{key} = {json.dumps(value)}")
        return "\n".join(lines) + "\n" + "\n".join(tables) + "\n"

    def write_coordinator_config(self, index: int = 0) -> Path:
        tokens = [
            {"name": "demo-kiosk", "role": "kiosk", "sha256": token_digest(self.kiosk_token)},
            {"name": "demo-operator", "role": "operator",
             "sha256": token_digest(self.operator_token)},
            {"name": "demo-prometheus", "role": "metrics",
             "sha256": token_digest(self.metrics_token)},
        ] + [
            {"name": f"agent-{slot.printer_id}", "role": "agent",
             "printer_id": slot.printer_id, "sha256": token_digest(slot.token)}
            for slot in self.printers.values()
        ]  # fmt: skip
        name = self.coordinator_name(index)
        config: dict[str, Any] = {
            "listen_port": self.coordinator_ports[index],
            # A venue on one machine needs no discovery; mDNS on port 5353 is
            # shared by every process of the machine and tests must not cross.
            "mdns": False,
            "state_dir": str(self.root / name),
            **({"redis_url": self.redis.url} if self.redis is not None else {}),
            # The venue's printers are set up here: jobs may name one before its agent's
            # first heartbeat (docs/config.md, known_printers).
            "known_printers": list(self.printer_ids),
            **self.extra_coordinator_config,
            "tokens": tokens,
        }
        path = self.root / f"{name}.toml"
        path.write_text(self._toml(config))
        return path

    def write_agent_config(self, slot: PrinterSlot) -> Path:
        config: dict[str, Any] = {
            "printer_id": slot.printer_id,
            "coordinator_url": self.url,
            "token": slot.token,
            "state_dir": str(self.root / "agents" / slot.printer_id),
            # 0 unless pinned: any free port, picked by the agent as it binds (a port
            # chosen here could be taken by another process before the agent starts: a
            # test failed with EADDRINUSE so); the agent logs the port it bound.
            "status_port": slot.status_port,
            "printer": {"kind": "emulator", "host": "127.0.0.1", "port": slot.port},
            "mdns": False,
            # A venue on one machine: badges may come from files in the venue's folder and
            # from this machine's own web servers (the agent allows neither by default).
            "badge_file_roots": [str(self.root)],
            "badge_http_hosts": ["127.0.0.1:*"],
        }
        for key, value in self.agent_overrides.get(slot.printer_id, {}).items():
            if value is None:  # TOML has no null: None leaves the key out (its default)
                config.pop(key, None)
                continue
            merge = isinstance(value, dict) and isinstance(config.get(key), dict)
            config[key] = {**config[key], **value} if merge else value
        path = self.root / f"agent-{slot.printer_id}.toml"
        path.write_text(self._toml(config))
        return path

    # ------------------------------------------------------------ processes

    def _badgeline(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "badgeline.cli", *args]

    def _add(self, name: str, command: list[str]) -> ManagedProcess:
        managed = ManagedProcess(name, command, self.root / "logs" / f"{name}.log")
        self.processes[name] = managed
        managed.start()
        return managed

    def start_redis(self) -> None:
        """The Redis server every coordinator of the venue shares (`shared_redis`)."""
        self.redis = EmbeddedRedis(self.root / "redis")
        self.redis.start()

    def start_coordinator(self, index: int = 0, wait: bool = True) -> None:
        self._add(self.coordinator_name(index), self._badgeline(
            "coordinator", "--config", str(self.write_coordinator_config(index))))  # fmt: skip
        if wait:
            self.wait_for_coordinator(index)

    def wait_for_coordinator(self, index: int = 0) -> None:
        url, name = self.coordinator_urls[index], self.coordinator_name(index)
        # 60 s: a coordinator imports for seconds, and far longer on a shared, loaded machine.
        wait_until(lambda: self._alive(name) and http_ok(url + "/healthz"), 60,
                   f"the coordinator at {url} to answer")  # fmt: skip
        try:
            http_json("GET", url + "/v1/printers", token=self.operator_token)
        except HttpStatusError as error:
            if error.status != 401:
                raise
            # Another process answered /healthz (another venue's coordinator on this
            # port, while ours was still starting): it does not know our tokens.
            raise RuntimeError(
                f"another process answers on {url} (it refuses this venue's operator "
                f"token): stop it, or give {name} another port"
            ) from None

    def start_emulator(self, printer_id: str, wait: bool = True) -> None:
        slot = self.printers[printer_id]
        self._add(f"emulator-{printer_id}", self._badgeline(
            "emulator", "--port", str(slot.port), "--control-port", str(slot.control_port),
            "--out", str(self.badges_dir / printer_id),
            *self.emulator_args.get(printer_id, [])))  # fmt: skip
        if wait:
            self.wait_for_emulator(printer_id)

    def wait_for_emulator(self, printer_id: str) -> None:
        url, name = self.emulator_url(printer_id), f"emulator-{printer_id}"
        wait_until(lambda: self._alive(name) and http_ok(url + "/status"), 20,
                   f"emulator {printer_id}")  # fmt: skip

    def _alive(self, name: str) -> bool:
        """True while the process runs; a process that exited fails the wait with its log."""
        managed = self.processes[name]
        if managed.running:
            return True
        tail = managed.log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{name} exited while starting; its log ends:\n{tail}")

    def start_agent(self, printer_id: str) -> ManagedProcess:
        slot = self.printers[printer_id]
        return self._add(f"agent-{printer_id}", self._badgeline(
            "agent", "--config", str(self.write_agent_config(slot))))  # fmt: skip

    def start(self) -> None:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        if self.shared_redis:
            self.start_redis()
        # Coordinators and emulators start side by side: each takes a second or two to
        # import, and none needs another (agents, started next, need both).
        for index in range(self.coordinator_count):
            self.start_coordinator(index, wait=False)
        for printer_id in self.printer_ids:
            self.start_emulator(printer_id, wait=False)
        for index in range(self.coordinator_count):
            self.wait_for_coordinator(index)
        for printer_id in self.printer_ids:
            self.wait_for_emulator(printer_id)
        agents_started_at = time.time()
        for printer_id in self.printer_ids:
            self.start_agent(printer_id)
        agents = [f"agent-{p}" for p in self.printer_ids]
        wait_until(lambda: all(self._alive(a) for a in agents)
                   and self.all_printers_healthy(heard_since=agents_started_at),
                   60, "every printer to report healthy")  # fmt: skip

    def printer_states(self) -> dict[str, str]:
        printers = self.api("GET", "/v1/printers")["items"]
        return {p["printer_id"]: p["state"] for p in printers}

    def all_printers_healthy(self, heard_since: float | None = None) -> bool:
        """Every printer `healthy`; with `heard_since`, on a heartbeat sent after it.

        A venue kept from an earlier run (the demo's folder) still lists its printers
        `healthy` from their last heartbeats, long stale: routing takes no printer
        whose heartbeat is stale, so only this run's heartbeats make the venue ready.
        """
        printers = self.api("GET", "/v1/printers")["items"]
        now = time.time()
        seen = {p["printer_id"]: p for p in printers}

        def ready(printer_id: str) -> bool:
            printer = seen.get(printer_id)
            if printer is None or printer["state"] != "healthy":
                return False
            age = printer.get("last_heartbeat_age_s")
            return heard_since is None or (age is not None and now - age >= heard_since - 0.5)

        return all(ready(p) for p in self.printer_ids)

    def stop(self) -> None:
        # Agents first, so they do not spend their last seconds retrying a dead coordinator.
        stop_together([p for name, p in self.processes.items() if name.startswith("agent")])
        stop_together([p for name, p in self.processes.items() if not name.startswith("agent")])
        if self.redis is not None:
            self.redis.stop()

    def kill_agent(self, printer_id: str) -> None:
        """SIGKILL, as a power cut would: no goodbye, no last heartbeat."""
        self.processes[f"agent-{printer_id}"].kill()

    def restart_agent(self, printer_id: str) -> ManagedProcess:
        self.processes[f"agent-{printer_id}"].stop()
        return self.start_agent(printer_id)

    def set_fault(self, printer_id: str, fault: str) -> None:
        http_json("POST", self.emulator_url(printer_id) + "/fault", {"fault": fault})

    def set_speed(self, printer_id: str, ms_per_badge: int) -> None:
        http_json("POST", self.emulator_url(printer_id) + "/speed", {"ms_per_badge": ms_per_badge})

    def submit(
        self,
        printer_target: str,
        attendee_id: str,
        pdf_ref: str,
        priority: int = 100,
        idempotency_key: str | None = None,
    ) -> Any:
        return self.api("POST", "/v1/jobs", {
            "attendee_id": attendee_id, "badge_pdf_ref": pdf_ref,
            "printer_target": printer_target, "priority": priority,
            "idempotency_key": idempotency_key or f"scan-{attendee_id}-{secrets.token_hex(4)}",
        }, self.kiosk_token)  # fmt: skip

    def upload_badge(self, pdf: bytes) -> str:
        """Put a badge PDF in the artifact store; returns its `artifact://` ref."""
        import hashlib

        sha = hashlib.sha256(pdf).hexdigest()
        self.api("PUT", f"/v1/artifacts/{sha}.pdf", pdf, self.kiosk_token)
        return f"artifact://{sha}.pdf"

    def job(self, job_id: str) -> Any:
        return self.api("GET", f"/v1/jobs/{job_id}")

    def emulator_url(self, printer_id: str) -> str:
        return f"http://127.0.0.1:{self.printers[printer_id].control_port}"

    def printed_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for printer_id in self.printer_ids:
            for row in http_json("GET", self.emulator_url(printer_id) + "/printed"):
                rows.append({**row, "printer_id": printer_id})
        return rows

    # ------------------------------------------------------------ API helpers

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        return http_json(method, self.url + path, body, token or self.operator_token)


def http_json(method: str, url: str, body: Any = None, token: str | None = None) -> Any:
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None and not isinstance(body, bytes):
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        payload = error.read()
        raise HttpStatusError(error.code, json.loads(payload) if payload else None) from None


class HttpStatusError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}")
