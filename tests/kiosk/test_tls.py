"""A kiosk delivers to an HTTPS coordinator it trusts through `ca_file` (a venue's own
CA), and one that does not trust the certificate delivers nothing and says why, with
the scan still kept. The coordinator is `badgeline coordinator` with a certificate made
for the test."""

from __future__ import annotations

import secrets
from pathlib import Path

from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.kiosk import Delivery
from badgeline.localvenue import wait_until
from tests.kiosk.conftest import MakeKiosk, unique_attendee
from tests.security.conftest import running_coordinator, self_signed_certificate


def test_a_kiosk_trusts_the_venue_ca_it_is_given_and_no_other(
    tmp_path: Path, redis_server: EmbeddedRedis, make_kiosk: MakeKiosk, badge: bytes
) -> None:
    certificate = self_signed_certificate(tmp_path / "ca")
    with running_coordinator(
        tmp_path, redis_server.url, "k" + secrets.token_hex(5),
        client_ssl=certificate.client_context(),
        tls_cert_file=certificate.cert_file, tls_key_file=certificate.key_file,
    ) as live:  # fmt: skip
        # GIVEN a kiosk that does not know the venue's CA
        stranger = make_kiosk(live.url, outbox_path=tmp_path / "stranger" / "outbox.sqlite3")
        refused = stranger.submit(unique_attendee(), badge, "printer-a")
        # THEN nothing is delivered, the scan stays, and the reason is the certificate
        wait_until(lambda: stranger.last_delivery_error is not None, 10, "an attempt")
        status = stranger.status(refused, refresh=False)
        assert (status.delivery, status.error_code) == (Delivery.PENDING, "coordinator_away")
        assert "CERTIFICATE_VERIFY_FAILED" in (status.error_message or "")
        # WHEN a kiosk is given the venue's CA
        kiosk = make_kiosk(live.url, ca_file=certificate.cert_file)
        ticket = kiosk.submit(unique_attendee(), badge, "printer-a")
        # THEN its scan is delivered over HTTPS
        accepted = kiosk.wait(ticket, 15, until=lambda s: s.delivery is Delivery.ACCEPTED)
        assert accepted.job_id is not None and live.url.startswith("https://")
