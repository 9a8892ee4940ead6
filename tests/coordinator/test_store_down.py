"""When Redis is unreachable the coordinator answers 503 store_unavailable with
Retry-After (the kiosk retries with the same key), never a 500, and /healthz
says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.embedded import EmbeddedRedis
from tests.coordinator import flows
from tests.helpers import job_body


async def test_an_unreachable_store_is_a_503_with_retry_after(
    aiohttp_client: Any, settings: CoordinatorSettings, tmp_path: Path
) -> None:
    # GIVEN a coordinator on a Redis server of its own
    server = EmbeddedRedis(tmp_path / "redis", appendfsync="everysec")
    server.start()
    redis = Redis.from_url(server.url, socket_connect_timeout=1)
    try:
        client = await aiohttp_client(create_app(settings, redis))
        await flows.submit(client)
        # WHEN the server goes away
        server.stop()
        # THEN requests are answered 503 in the error shape, telling the caller to retry
        response = await client.post("/v1/jobs", json=job_body(), headers=flows.KIOSK)
        flows.assert_error_shape(await flows.expect(response, 503), "store_unavailable")
        assert response.headers["Retry-After"] == "1"
        health = await client.get("/healthz")
        assert health.status == 503 and (await health.json())["ok"] is False
        # AND agents and operators get the same answer, which the OpenAPI document lists
        document = await (await client.get("/v1/openapi.json")).json()
        for method, path, template, headers in [
            ("get", "/v1/jobs/job_0000000000000000", "/v1/jobs/{job_id}", flows.KIOSK),
            ("post", "/v1/agents/printer-a/lease", "/v1/agents/{printer_id}/lease", flows.agent()),
            ("get", "/v1/printers", "/v1/printers", flows.OPERATOR),
        ]:
            response = await client.request(method, path, headers=headers)
            flows.assert_error_shape(await flows.expect(response, 503), "store_unavailable")
            assert "503" in document["paths"][template][method]["responses"], template
        await client.close()
    finally:
        await redis.aclose()
        server.stop()
