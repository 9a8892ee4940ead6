"""`badgeline coordinator --check`: what start-up would refuse, found before a
service is started on it, and nothing started to find it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from badgeline.coordinator.api.auth import token_digest
from tests.security.conftest import self_signed_certificate

REPO = Path(__file__).resolve().parents[2]


def check(folder: Path, config: str) -> subprocess.CompletedProcess[str]:
    (folder / "coordinator.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BADGELINE_")}
    return subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "coordinator", "--config", "coordinator.toml",
         "--check"],
        cwd=folder, env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def tokens(*roles: str) -> str:
    return "".join(f'\n[[tokens]]\nname = "{role}-1"\nrole = "{role}"\n'
                   f'sha256 = "{token_digest(role * 8)}"\n' for role in roles)  # fmt: skip


def test_a_good_config_is_summed_up_and_nothing_is_started(tmp_path: Path) -> None:
    # GIVEN a config serving HTTPS on loopback with an operator and a kiosk token
    certificate = self_signed_certificate(tmp_path / "tls")
    config = (f'venue = "hall-b"\nlisten_port = 8999\ntls_cert_file = "{certificate.cert_file}"\n'
              f'tls_key_file = "{certificate.key_file}"\n')  # fmt: skip
    config += tokens("operator", "kiosk")
    # WHEN it is checked
    result = check(tmp_path, config)
    # THEN it says what it would serve, and exits 0
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "coordinator.toml: ok",
        "  serves   https://127.0.0.1:8999 (venue hall-b)",
        "  tokens   1 operator, 1 kiosk, 0 agent (enrolled agents bring their own)",
        "  redis    embedded, in var/coordinator/redis",
        "  mdns     advertised on 127.0.0.1",
    ]
    # AND started nothing: no state folder, no embedded Redis
    assert not (tmp_path / "var").exists()


def test_a_key_that_is_not_the_certificates_is_refused_with_exit_2(tmp_path: Path) -> None:
    # GIVEN the certificate of one key pair and the key of another
    certificate = self_signed_certificate(tmp_path / "tls")
    other = self_signed_certificate(tmp_path / "other")
    config = (f'tls_cert_file = "{certificate.cert_file}"\n'
              f'tls_key_file = "{other.key_file}"\n' + tokens("operator"))  # fmt: skip
    # WHEN it is checked THEN it names the settings and exits 2, as start-up would
    result = check(tmp_path, config)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("tls_cert_file/tls_key_file: cannot load ")
    assert result.stdout == "" and "Traceback" not in result.stderr


def test_an_address_this_machine_does_not_have_is_refused_with_exit_2(tmp_path: Path) -> None:
    # GIVEN a listen address of another machine (TEST-NET-1, RFC 5737: never local)
    result = check(tmp_path, 'listen_host = "192.0.2.1"\n' + tokens("operator"))
    # WHEN/THEN the check says so, where start-up would have failed only after Redis started
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("listen_host: cannot listen on 192.0.2.1 here ("), result.stderr
    assert "0.0.0.0" in result.stderr and not (tmp_path / "var").exists()


def test_a_config_without_an_operator_token_passes_with_a_warning(tmp_path: Path) -> None:
    # GIVEN kiosk tokens only WHEN checked THEN it would start, and says who is missing
    result = check(tmp_path, "mdns = false\n" + tokens("kiosk"))
    assert result.returncode == 0, result.stderr
    assert "  mdns     off" in result.stdout
    assert "  warning  no operator token: nobody can issue enrolment codes" in result.stdout
