"""free_port: tests and the local venue start many servers from one process."""

from __future__ import annotations

import socket

from badgeline.coordinator.store.embedded import free_port


def test_free_port_never_hands_out_a_port_twice_and_each_is_bindable() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports[-1]))
