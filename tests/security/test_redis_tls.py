"""`rediss://`: the coordinator reaches an external Redis over TLS, trusting the venue's CA.

The embedded valkey-server is built without TLS, so the Redis here sits behind a
TLS terminator (as a venue may run stunnel or a TLS proxy in front of its Redis):
the coordinator's connections are real TLS, checked against the CA that
`redis_url`'s `ssl_ca_certs` names, and the commands reach a real Redis behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.connection import connected
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import KNOWN_TEST_PRINTERS
from tests.conftest import test_tokens as configured_tokens
from tests.coordinator import flows
from tests.security.conftest import Certificate, self_signed_certificate


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def tls_terminator(certificate: Certificate, redis_port: int) -> AsyncIterator[list[str]]:
    """A TLS port in front of the plain Redis port; yields each handshake's TLS version."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate.cert_file, certificate.key_file)
    handshakes: list[str] = []

    async def serve(
        client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        ssl_object = client_writer.get_extra_info("ssl_object")
        handshakes.append(ssl_object.version() if ssl_object is not None else "plain")
        redis_reader, redis_writer = await asyncio.open_connection("127.0.0.1", redis_port)
        await asyncio.gather(_pump(client_reader, redis_writer), _pump(redis_reader, client_writer))

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    handshakes_port = server.sockets[0].getsockname()[1]
    handshakes.append(str(handshakes_port))  # the first entry: the port to connect to
    async with server:
        yield handshakes


@pytest.fixture
def redis_server(tmp_path: Path) -> Any:
    server = EmbeddedRedis(tmp_path / "redis", appendfsync="everysec")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_the_coordinator_works_through_rediss_trusting_the_venue_ca(
    tmp_path: Path, redis_server: EmbeddedRedis, aiohttp_client: Any
) -> None:
    certificate = self_signed_certificate(tmp_path / "tls")
    async with tls_terminator(certificate, redis_server.port) as handshakes:
        port = handshakes.pop(0)
        # GIVEN redis_url with rediss://, the login, and the venue CA to trust
        settings = CoordinatorSettings(
            venue="tls-hall", state_dir=tmp_path / "state", tokens=configured_tokens(),
            known_printers=KNOWN_TEST_PRINTERS, mdns=False,
            redis_url=f"rediss://:{redis_server.password}@127.0.0.1:{port}/0"
                      f"?ssl_ca_certs={certificate.cert_file}",
        )  # fmt: skip
        async with connected(settings, settings.redis_url) as redis:
            client = await aiohttp_client(create_app(settings, redis))
            # WHEN a kiosk submits a job
            accepted = await flows.submit(client)
            await client.close()
        # THEN it went over TLS to the Redis behind the terminator, and is stored there
        assert handshakes and all(version.startswith("TLS") for version in handshakes)
        behind = Redis(port=redis_server.port, password=redis_server.password)
        try:
            assert await behind.exists(VenueKeys("tls-hall").job(accepted["job_id"])) == 1
        finally:
            await behind.aclose()

        # AND a client that does not trust the venue CA gets no connection at all
        untrusting = Redis.from_url(
            f"rediss://:{redis_server.password}@127.0.0.1:{port}/0", socket_connect_timeout=2
        )
        try:
            with pytest.raises(Exception, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify"):
                await untrusting.ping()
        finally:
            await untrusting.aclose()
