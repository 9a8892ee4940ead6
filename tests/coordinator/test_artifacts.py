"""The artifact store: kiosks upload badge PDFs, agents fetch them by hash."""

from __future__ import annotations

import hashlib
import io
from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import KIOSK_TOKEN, agent_token, auth

PDF = b"%PDF-1.7\n" + b"0" * 5000 + b"\n%%EOF\n"
SHA = hashlib.sha256(PDF).hexdigest()


async def test_upload_then_fetch_by_hash(client: TestClient[Any, Any]) -> None:
    # GIVEN a kiosk uploads a badge PDF under its hash
    put = await client.put(f"/v1/artifacts/{SHA}.pdf", data=PDF, headers=auth(KIOSK_TOKEN))
    assert put.status == 201
    assert (await put.json())["ref"] == f"artifact://{SHA}.pdf"
    # WHEN it uploads it again, THEN that is idempotent
    again = await client.put(f"/v1/artifacts/{SHA}.pdf", data=PDF, headers=auth(KIOSK_TOKEN))
    assert again.status == 200
    # AND an agent fetches the same bytes
    got = await client.get(f"/v1/artifacts/{SHA}.pdf", headers=auth(agent_token("printer-a")))
    assert got.status == 200 and got.content_type == "application/pdf"
    assert await got.read() == PDF


async def test_refuses_wrong_hash_non_pdf_and_oversize(client: TestClient[Any, Any]) -> None:
    kiosk = auth(KIOSK_TOKEN)
    wrong = await client.put(f"/v1/artifacts/{'0' * 64}.pdf", data=PDF, headers=kiosk)
    assert wrong.status == 422
    not_pdf = b"<html></html>"
    sha = hashlib.sha256(not_pdf).hexdigest()
    html = await client.put(f"/v1/artifacts/{sha}.pdf", data=not_pdf, headers=kiosk)
    assert html.status == 415 and (await html.json())["error"]["code"] == "unsupported_media_type"
    huge = b"%PDF-" + b"0" * (6 * 1024 * 1024)
    big = await client.put(f"/v1/artifacts/{hashlib.sha256(huge).hexdigest()}.pdf",
                           data=io.BytesIO(huge), headers=kiosk)  # fmt: skip
    assert big.status == 413 and (await big.json())["error"]["code"] == "body_too_large"


async def test_missing_artifact_and_bad_names_are_404(client: TestClient[Any, Any]) -> None:
    agent = auth(agent_token("printer-a"))
    missing = await client.get(f"/v1/artifacts/{'a' * 64}.pdf", headers=agent)
    assert missing.status == 404 and (await missing.json())["error"]["code"] == "not_found"
    bad = await client.get("/v1/artifacts/../../etc/passwd", headers=agent)
    assert bad.status == 404


async def test_agents_cannot_upload(client: TestClient[Any, Any]) -> None:
    put = await client.put(f"/v1/artifacts/{SHA}.pdf", data=PDF,
                           headers=auth(agent_token("printer-a")))  # fmt: skip
    assert put.status == 403
