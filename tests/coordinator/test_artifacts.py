"""The artifact store: kiosks upload badge PDFs, agents fetch them by hash."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from badgeline import samples
from tests.conftest import KIOSK_TOKEN, agent_token, auth

PDF = samples.sample_badge_pdf()
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


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (samples.core_font_badge_pdf, "font_not_embedded"),
        (samples.encrypted_badge_pdf, "encrypted"),
        (samples.many_pages_badge_pdf, "too_many_pages"),
        (lambda: samples.many_pages_badge_pdf(500), "too_complex"),  # over the object bound
        (samples.giant_page_pdf, "page_size"),
        (samples.malformed_pdf, "malformed"),
        (samples.decompression_bomb_pdf, "too_complex"),
    ],
)
async def test_a_badge_no_agent_would_print_is_refused_at_upload_with_the_reason(
    client: TestClient[Any, Any], make: Callable[[], bytes], reason: str
) -> None:
    # GIVEN a PDF that breaks one of the badge rules
    pdf = make()
    sha256 = hashlib.sha256(pdf).hexdigest()
    # WHEN a kiosk uploads it
    put = await client.put(f"/v1/artifacts/{sha256}.pdf", data=pdf, headers=auth(KIOSK_TOKEN))
    # THEN the answer says, now, which rule and how to fix it
    body = await put.json()
    assert put.status == 422, body
    assert body["error"]["code"] == "badge_rejected" and body["reason"] == reason
    assert body["error"]["message"]
    # AND nothing was stored for an agent to fetch
    got = await client.get(f"/v1/artifacts/{sha256}.pdf", headers=auth(agent_token("printer-a")))
    assert got.status == 404
