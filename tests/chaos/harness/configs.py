"""What a chaos venue starts its processes with: settings that make a run converge
in seconds, and the TOML config files of its coordinators and agents."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from badgeline.coordinator.api.auth import token_digest
from badgeline.localvenue import PrinterSlot

# Settings that make a chaos run converge in seconds rather than minutes; each is a
# documented coordinator option (docs/config.md), none changes what is guaranteed.
COORDINATOR_DEFAULTS: dict[str, Any] = {
    "ack_grace_s": 3.0,
    "lease_ttl_s": 10.0,
    "lease_max_wait_s": 5.0,
    "retry_backoff_unit_s": 0.25,
    "retry_backoff_cap_s": 4.0,
    "max_attempts": 8,
    "mdns": False,
    "log_level": "INFO",
}
AGENT_DEFAULTS: dict[str, Any] = {
    "mdns": False,
    "lease_wait_s": 5.0,
    "retry_initial_s": 0.2,
    "retry_max_s": 2.0,
    "connect_timeout_s": 2.0,
    "request_timeout_s": 5.0,
    "width_dots": 192,  # a narrow badge: the render is not what a chaos run tests
    "stop_grace_s": 3.0,
    # A fault that clears a page from the printer's buffer leaves the agent waiting
    # for a process ID response that never comes; at the agent's default of 60 s each
    # such page would hold its printer (and a run's settling) for a minute. 10 s is
    # still six times the slowest printing a run injects (SLOW_MS: 1.5 s per badge).
    "print_confirm_timeout_s": 10.0,
}


def tokens(kiosk_token: str, operator_token: str,
           printers: Iterable[PrinterSlot]) -> list[dict[str, Any]]:  # fmt: skip
    """The venue's API tokens: one kiosk, one operator, one agent per printer."""
    entries = [
        {"name": "chaos-kiosk", "role": "kiosk", "sha256": token_digest(kiosk_token)},
        {"name": "chaos-operator", "role": "operator", "sha256": token_digest(operator_token)},
    ]
    return entries + [
        {"name": f"agent-{s.printer_id}", "role": "agent", "printer_id": s.printer_id,
         "sha256": token_digest(s.token)}
        for s in printers
    ]  # fmt: skip


def agent_config(slot: PrinterSlot, coordinator_url: str, state_dir: Path,
                 settings: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """An agent for the emulator in `slot`, talking to `coordinator_url`."""
    return {
        "printer_id": slot.printer_id,
        "agent_id": f"chaos-{slot.printer_id}",
        "coordinator_url": coordinator_url,
        "token": slot.token,
        "state_dir": str(state_dir),
        "status_port": 0,
        **settings,
        "printer": {"kind": "emulator", "host": "127.0.0.1", "port": slot.port},
    }


def _toml_value(value: Any) -> str:
    return json.dumps(value)


def to_toml(values: dict[str, Any]) -> str:
    """Enough TOML for these configs: scalars, lists, one level of tables and arrays of them."""
    lines: list[str] = []
    tables: list[str] = []
    for key, value in values.items():
        if isinstance(value, dict):
            body = "\n".join(f"{k} = {_toml_value(v)}" for k, v in value.items())
            tables.append(f"\n[{key}]\n{body}")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for entry in value:
                body = "\n".join(f"{k} = {_toml_value(v)}" for k, v in entry.items())
                tables.append(f"\n[[{key}]]\n{body}")
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n" + "\n".join(tables) + "\n"
