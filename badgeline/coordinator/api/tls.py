"""Optional TLS on the coordinator's listener (`tls_cert_file` + `tls_key_file`).

The venue's own CA or a self-signed certificate both work; agents and kiosks must
trust it. TLS 1.2 is the floor; the ciphers are Python's defaults for a server.
"""

from __future__ import annotations

import ssl

from badgeline.coordinator.config import ConfigError, CoordinatorSettings


def server_context(settings: CoordinatorSettings) -> ssl.SSLContext | None:
    """The listener's TLS context, or None when TLS is not configured."""
    if settings.tls_cert_file is None or settings.tls_key_file is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(
            f"tls_cert_file/tls_key_file: cannot load {settings.tls_cert_file} with "
            f"{settings.tls_key_file}: {error}"
        ) from None
    return context


def scheme(settings: CoordinatorSettings) -> str:
    return "https" if settings.tls_cert_file is not None else "http"
