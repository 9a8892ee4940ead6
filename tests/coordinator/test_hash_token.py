"""`badgeline hash-token`: what it prints is a config entry the coordinator takes,
and the token it prints is the one that entry lets in; bad options are named."""

from __future__ import annotations

import tomllib

import pytest

from badgeline.cli import main
from badgeline.coordinator.api.auth import Identity, TokenAuthority
from badgeline.coordinator.config import CoordinatorSettings


def hash_token(capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str, str]:
    code = main(["hash-token", *options])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("options", "identity"),
    [
        (["--name", "kiosk-hall-a", "--role", "kiosk"], Identity("kiosk-hall-a", "kiosk")),
        (["--name", "ops", "--role", "operator"], Identity("ops", "operator")),
        (["--name", "prometheus", "--role", "metrics"], Identity("prometheus", "metrics")),
        (
            ["--name", "pi-a1", "--role", "agent", "--printer-id", "printer-a1"],
            Identity("pi-a1", "agent", "printer-a1"),
        ),
        # A name TOML must escape: quotes, a backslash, DEL, a character beyond the BMP.
        (
            ["--name", 'Zoë "desk" \\ 2\x7f🎫', "--role", "kiosk"],
            Identity('Zoë "desk" \\ 2\x7f🎫', "kiosk"),
        ),
    ],
)
def test_the_printed_entry_loads_and_lets_the_printed_token_in(
    capsys: pytest.CaptureFixture[str], options: list[str], identity: Identity
) -> None:
    code, out, err = hash_token(capsys, *options)

    assert (code, err) == (0, "")
    token = next(line.removeprefix("# token: ") for line in out.splitlines()
                 if line.startswith("# token: "))  # fmt: skip
    settings = CoordinatorSettings.model_validate(tomllib.loads(out))
    assert TokenAuthority(settings.tokens).identify(f"Bearer {token}") == identity
    assert token not in out.split("[[tokens]]", 1)[1]  # only its hash goes into the config


def test_a_chosen_token_is_hashed_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    chosen = "a-token-of-my-own-choosing"
    code, out, _ = hash_token(capsys, "--name", "k", "--role", "kiosk", "--token", chosen)

    assert code == 0
    settings = CoordinatorSettings.model_validate(tomllib.loads(out))
    assert TokenAuthority(settings.tokens).identify(f"Bearer {chosen}") == Identity("k", "kiosk")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--name", "pi-a1", "--role", "agent"], "--printer-id: an agent token is bound"),
        (
            ["--name", "k", "--role", "kiosk", "--printer-id", "printer-a"],
            "--printer-id: only agent tokens",
        ),
        (
            ["--name", "pi", "--role", "agent", "--printer-id", "Printer-A"],
            "--printer-id: 'Printer-A' is not a printer id",
        ),
        (["--name", "k", "--role", "kiosk", "--token", "short"], "--token: 5 characters"),
        (["--name", "", "--role", "operator"], "--name: "),
        (["--name", "x" * 65, "--role", "operator"], "--name: "),
    ],
)
def test_bad_options_are_named_without_a_traceback_and_nothing_is_printed(
    capsys: pytest.CaptureFixture[str], options: list[str], named: str
) -> None:
    code, out, err = hash_token(capsys, *options)

    assert code == 2
    assert out == ""  # no token that looks usable
    assert err.startswith("badgeline hash-token: " + named), err
    assert "Traceback" not in err
