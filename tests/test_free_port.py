"""free_port: tests and the local venue start many servers from one process."""

from __future__ import annotations

import socket

import pytest

from badgeline.coordinator.store.embedded import FREE_PORTS_ENV, free_port


def test_free_port_never_hands_out_a_port_twice_and_each_is_bindable() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports[-1]))


def test_a_share_of_the_ports_keeps_processes_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN this process has share 1 of 3 (as a test worker and what it starts have)
    monkeypatch.setenv(FREE_PORTS_ENV, "1/3")
    # THEN every port it picks is of its share, so another share's process never picks it
    assert {free_port() % 3 for _ in range(50)} == {1}
    # AND a share it cannot read is no share at all
    monkeypatch.setenv(FREE_PORTS_ENV, "3/3")
    assert len({free_port() % 3 for _ in range(60)}) > 1
