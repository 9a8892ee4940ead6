"""An agent trusting a coordinator's self-signed certificate through `coordinator_ca_file`:
the real coordinator process serving HTTPS and advertising it on mDNS, a `badgeline agent`
process finding it there, enrolling and heartbeating over HTTPS."""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from badgeline.agent.client import CoordinatorClient
from badgeline.agent.config import TOKEN_FILE_NAME, AgentSettings
from badgeline.agent.http_client import HttpFailure
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.emulator import PrinterEmulator
from tests.agent.agent_process import (
    LOOPBACK,
    AgentProcess,
    emulator_table,
    unique_venue,
    write_agent_toml,
)
from tests.conftest import OPERATOR_TOKEN, auth
from tests.helpers import wait_for
from tests.security.conftest import running_coordinator, self_signed_certificate

# mDNS on loopback is one network for every test process: these run one at a time.
pytestmark = pytest.mark.xdist_group("mdns")

PRINTER = "printer-b"


def _operator(url: str, context: ssl.SSLContext, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode() if body is not None else None,
        method="POST" if body is not None else "GET",
        headers={**auth(OPERATOR_TOKEN), "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


async def test_an_agent_trusts_a_self_signed_coordinator_through_its_ca_file(
    tmp_path: Path, redis_server: EmbeddedRedis, start_emulator: Any
) -> None:
    # GIVEN a coordinator serving HTTPS with a self-signed certificate, found by mDNS
    certificate = self_signed_certificate(tmp_path / "tls")
    trusting = certificate.client_context()
    emulator: PrinterEmulator = await start_emulator()
    venue = unique_venue()
    with running_coordinator(
        tmp_path, redis_server.url, venue, client_ssl=trusting, mdns=True,
        mdns_interfaces=LOOPBACK, tls_cert_file=certificate.cert_file,
        tls_key_file=certificate.key_file,
    ) as live:  # fmt: skip
        code = _operator(live.url + "/v1/enrolment-codes", trusting, {"printer_id": PRINTER})
        # AND an agent with no URL, told to trust that certificate (and nothing about a token)
        config = write_agent_toml(
            tmp_path / "agent.toml", emulator_table(emulator), printer_id=PRINTER,
            agent_id="pi-tls", venue=venue, mdns_interfaces=LOOPBACK,
            enrolment_code=code["code"], coordinator_ca_file=certificate.cert_file,
            state_dir=tmp_path / "state", status_port=0, heartbeat_interval_s=0.2,
            retry_initial_s=0.05, retry_max_s=0.5,
            lease_wait_s=1.0,  # the coordinator's stop waits out a long-poll
        )  # fmt: skip
        agent = await AgentProcess(config).start()
        try:
            # WHEN it runs THEN it enrols and heartbeats over HTTPS
            async def heartbeating() -> bool:
                assert agent.process is not None and agent.process.returncode is None, agent.tail()
                printers = _operator(live.url + "/v1/printers", trusting)["items"]
                return any(p["printer_id"] == PRINTER and p["agent_id"] == "pi-tls"
                           for p in printers)  # fmt: skip

            await wait_for(heartbeating, timeout_s=60)
            assert (tmp_path / "state" / TOKEN_FILE_NAME).exists()
            enrolled = [e for e in agent.events() if e.get("event") == "agent_enrolled"]
            assert enrolled and enrolled[0]["coordinator_url"] == live.url  # https, from mDNS
            assert await agent.terminate() == 0, agent.tail()
        finally:
            await agent.kill()

        # AND the same client without the CA file refuses the certificate
        values: dict[str, Any] = {
            "printer_id": PRINTER, "coordinator_url": live.url, "token": "t",
            "printer": emulator_table(emulator), "coordinator_ca_file": certificate.cert_file,
        }  # fmt: skip
        settings = AgentSettings(**values)
        for context, trusted in ((settings.client_ssl(), True), (None, False)):
            async with CoordinatorClient(live.url, PRINTER, "t", ssl_context=context) as client:
                if trusted:
                    response = await client.http.request("GET", live.url + "/healthz", timeout_s=10)
                    assert response.status == 200
                else:
                    with pytest.raises(HttpFailure, match="certificate not trusted"):
                        await client.http.request("GET", live.url + "/healthz", timeout_s=10)
