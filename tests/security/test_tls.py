"""Optional TLS on the coordinator's listener, tested on the real process with a
self-signed certificate made for the test."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from badgeline.coordinator.config import ConfigError, load_coordinator_settings
from badgeline.coordinator.store.embedded import EmbeddedRedis
from tests.conftest import KIOSK_TOKEN
from tests.helpers import job_body
from tests.security.conftest import (
    Certificate,
    http_status,
    running_coordinator,
    self_signed_certificate,
    write_config,
)


def _post_json(url: str, body: object, token: str, context: ssl.SSLContext) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return int(response.status), json.loads(response.read())


def test_the_coordinator_serves_https_with_the_configured_certificate(
    tmp_path: Path, redis_server: EmbeddedRedis, certificate: Certificate
) -> None:
    trusting = certificate.client_context()
    # GIVEN a coordinator configured with a certificate and its key
    with running_coordinator(
        tmp_path, redis_server.url, "tlsvenue1", client_ssl=trusting,
        tls_cert_file=certificate.cert_file, tls_key_file=certificate.key_file,
    ) as live:  # fmt: skip
        # WHEN a client that trusts the certificate calls it over https
        assert live.url.startswith("https://")
        health = http_status(live.url + "/healthz", trusting)
        status, accepted = _post_json(live.url + "/v1/jobs", job_body(), KIOSK_TOKEN, trusting)
        # THEN it answers, and says where it listens
        assert health == 200
        assert status == 201 and accepted["state"] == "queued"
        ready = [json.loads(line) for line in live.log().splitlines()
                 if '"coordinator_ready"' in line]  # fmt: skip
        assert ready and ready[0]["url"].startswith("https://")

        # AND a client that does not trust it is refused the handshake
        with pytest.raises(urllib.error.URLError) as refused:
            http_status(live.url + "/healthz", ssl.create_default_context())
        assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)

        # AND plain HTTP on the TLS port gets no API answer
        host, port = live.url.removeprefix("https://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as plain:
            plain.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = _read_all(plain)
        assert b'"ok"' not in answer


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except (ConnectionResetError, TimeoutError):
        pass
    return b"".join(chunks)


def _start_expecting_failure(tmp_path: Path, redis_url: str, **settings: object) -> str:
    config = write_config(tmp_path / "bad.toml", {
        "listen_port": 0, "redis_url": redis_url, "mdns": False, **settings,
    })  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "coordinator", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    return result.stderr


def test_a_key_that_does_not_match_stops_start_up(
    tmp_path: Path, redis_server: EmbeddedRedis, certificate: Certificate
) -> None:
    # GIVEN the certificate of one key pair and the key of another
    other = self_signed_certificate(tmp_path / "other")
    # WHEN the coordinator starts with them, THEN it stops (exit 2), naming the settings
    stderr = _start_expecting_failure(
        tmp_path, redis_server.url,
        tls_cert_file=certificate.cert_file, tls_key_file=other.key_file,
    )  # fmt: skip
    assert "tls_cert_file/tls_key_file" in stderr


def test_a_certificate_without_its_key_is_a_config_error(certificate: Certificate) -> None:
    with pytest.raises(ConfigError, match="tls_cert_file and tls_key_file"):
        load_coordinator_settings(tls_cert_file=certificate.cert_file)


def test_a_missing_certificate_file_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tls_key_file: .*does not exist"):
        load_coordinator_settings(tls_cert_file=tmp_path / "nope", tls_key_file=tmp_path / "nope")
