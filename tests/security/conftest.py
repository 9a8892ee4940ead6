"""Fixtures for the security tests: a coordinator as a real process (its own
listener, TLS and timeouts, its own stderr), certificates made on the spot, and
hypothesis settings that leave nothing behind in the repository."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from badgeline.coordinator.store.embedded import free_port
from tests.conftest import KNOWN_TEST_PRINTERS, test_tokens
from tests.coordinator.conftest import client, make_client  # noqa: F401 (the same fixtures)

# No example database (it would write .hypothesis/ into the checkout) and no
# deadline: a loaded machine is not a failure.
hypothesis_settings.register_profile(
    "badgeline-security", database=None, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)  # fmt: skip
hypothesis_settings.load_profile("badgeline-security")


@dataclass
class LiveCoordinator:
    url: str
    venue: str
    process: subprocess.Popen[bytes]
    log_path: Path
    ssl_context: ssl.SSLContext | None = None

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def _toml_value(value: Any) -> str:
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    return json.dumps(value)  # numbers, booleans, lists of those


def write_config(path: Path, settings: dict[str, Any]) -> Path:
    # The tests' printers are pre-registered: cases submit to them before any heartbeat.
    settings = {"known_printers": KNOWN_TEST_PRINTERS, **settings}
    lines = [f"{key} = {_toml_value(value)}" for key, value in settings.items()
             if value is not None]  # fmt: skip
    for entry in test_tokens():
        lines.append("[[tokens]]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in entry.model_dump(exclude_none=True).items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def http_status(url: str, context: ssl.SSLContext | None = None, timeout_s: float = 5) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _wait_until_serving(live: LiveCoordinator, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if live.process.poll() is not None:
            raise AssertionError(f"the coordinator exited ({live.process.returncode}):\n"
                                 f"{live.log()[-3000:]}")  # fmt: skip
        with contextlib.suppress(OSError):
            if http_status(live.url + "/healthz", live.ssl_context, timeout_s=2) == 200:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"the coordinator did not serve in {timeout_s} s:\n"
                                 f"{live.log()[-3000:]}")  # fmt: skip
        time.sleep(0.05)


@contextlib.contextmanager
def running_coordinator(
    directory: Path,
    redis_url: str | None,
    venue: str,
    *,
    client_ssl: ssl.SSLContext | None = None,
    **settings: Any,
) -> Iterator[LiveCoordinator]:
    """`badgeline coordinator` as a child process on a free port, for one venue
    (redis_url None: with its embedded Redis, in the state directory)."""
    port = free_port()
    config = write_config(directory / f"coordinator-{port}.toml", {
        "listen_host": "127.0.0.1", "listen_port": port, "venue": venue,
        "redis_url": redis_url, "state_dir": directory / "state", "mdns": False, **settings,
    })  # fmt: skip
    log_path = directory / f"coordinator-{port}.log"
    scheme = "https" if "tls_cert_file" in settings else "http"
    env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}  # no systemd here
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "badgeline.cli", "coordinator", "--config", str(config)],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    live = LiveCoordinator(f"{scheme}://127.0.0.1:{port}", venue, process, log_path, client_ssl)
    try:
        _wait_until_serving(live)
        yield live
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --------------------------------------------------------------------------- certificates


@dataclass(frozen=True)
class Certificate:
    cert_file: Path
    key_file: Path

    def client_context(self) -> ssl.SSLContext:
        """A client that trusts this self-signed certificate and nothing else."""
        context = ssl.create_default_context(cafile=str(self.cert_file))
        return context


def _with_cryptography(directory: Path, host: str) -> Certificate | None:
    try:
        import datetime
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        return None
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return Certificate(cert_file, key_file)


def _with_openssl(directory: Path, host: str) -> Certificate:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("neither the cryptography package nor openssl is installed (./dev installs "
                    "openssl)")  # fmt: skip
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", f"/CN={host}", "-addext", f"subjectAltName=IP:{host}",
         "-keyout", str(key_file), "-out", str(cert_file)],
        check=True, capture_output=True,
    )  # fmt: skip
    return Certificate(cert_file, key_file)


def self_signed_certificate(directory: Path, host: str = "127.0.0.1") -> Certificate:
    directory.mkdir(parents=True, exist_ok=True)
    return _with_cryptography(directory, host) or _with_openssl(directory, host)


@pytest.fixture
def certificate(tmp_path: Path) -> Certificate:
    return self_signed_certificate(tmp_path / "tls")
