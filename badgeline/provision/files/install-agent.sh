#!/bin/bash
# Install (or update) the badgeline print agent on a Raspberry Pi. Idempotent:
# run it again after changing agent.toml or with a newer wheel.
#
#   sudo ./install-agent.sh [--from DIR]
#
# DIR (default: this script's folder) holds what `badgeline provision` puts on
# the boot partition's badgeline/ folder:
#   agent.toml                   the agent's config      -> /etc/badgeline/agent.toml
#   badgeline-agent.service      the systemd unit        -> /etc/systemd/system/
#   99-badgeline-printers.rules  udev rules, group lp    -> /etc/udev/rules.d/
#   wheels/badgeline-*.whl       the agent (plus, optionally, its dependencies' wheels)
#   coordinator-ca.pem           optional: the CA (or self-signed certificate) of an
#                                https coordinator -> /etc/badgeline/coordinator-ca.pem,
#                                named by coordinator_ca_file in agent.toml
# On first boot badgeline-install.service runs this from /boot/firmware/badgeline.
set -euo pipefail

FROM="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PREFIX=/opt/badgeline
MARKER_DIR=/var/lib/badgeline-install

while [ $# -gt 0 ]; do
    case "$1" in
        --from) FROM="$2"; shift 2 ;;
        --prefix) PREFIX="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "install-agent.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

log() { echo "badgeline-install: $*"; }

if [ "$(id -u)" -ne 0 ]; then
    echo "install-agent.sh must run as root (sudo)" >&2
    exit 1
fi
for needed in agent.toml badgeline-agent.service 99-badgeline-printers.rules; do
    if [ ! -f "$FROM/$needed" ]; then
        echo "install-agent.sh: $FROM/$needed is missing" >&2
        exit 1
    fi
done
WHEEL="$(find "$FROM/wheels" -maxdepth 1 -name 'badgeline-*.whl' 2>/dev/null | sort | tail -n 1)"
if [ -z "$WHEEL" ]; then
    echo "install-agent.sh: no badgeline-*.whl in $FROM/wheels" >&2
    exit 1
fi

# 1. System packages: venv support and libusb (pyusb's backend). Skipped when
#    present, so a re-run on a Pi without network still works.
if ! python3 -c 'import ensurepip, venv' 2>/dev/null || ! ldconfig -p | grep -q libusb-1.0; then
    log "installing python3-venv and libusb"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv libusb-1.0-0
fi

# 2. The agent in its own venv. --find-links first: a wheelhouse bundled on the
#    boot partition installs without internet; anything missing comes from PyPI.
if [ ! -x "$PREFIX/venv/bin/python" ]; then
    log "creating $PREFIX/venv"
    mkdir -p "$PREFIX"
    python3 -m venv "$PREFIX/venv"
fi
log "installing $(basename "$WHEEL")"
"$PREFIX/venv/bin/python" -m pip install -q --upgrade --find-links "$FROM/wheels" "${WHEEL}[agent]"

# 3. Config. Group lp can read it: the agent runs as a transient user whose
#    only fixed identity is that group (DynamicUser + SupplementaryGroups=lp).
install -d -m 0755 /etc/badgeline
install -m 0640 -o root -g lp "$FROM/agent.toml" /etc/badgeline/agent.toml
if [ -f "$FROM/coordinator-ca.pem" ]; then
    # A certificate, not a secret: readable by the agent's transient user.
    install -m 0644 "$FROM/coordinator-ca.pem" /etc/badgeline/coordinator-ca.pem
fi

# 4. USB printer permissions. Re-trigger so a printer that is already plugged
#    in gets group lp now rather than at the next replug.
install -m 0644 "$FROM/99-badgeline-printers.rules" /etc/udev/rules.d/99-badgeline-printers.rules
udevadm control --reload || true
udevadm trigger --subsystem-match=usb --subsystem-match=usbmisc --action=add || true

# 5. A printer driven over libusb (kind = "usb") must not be claimed by the
#    kernel's usblp driver first, or python-escpos reports "Resource busy".
if grep -Eq '^[[:space:]]*kind[[:space:]]*=[[:space:]]*"usb"' /etc/badgeline/agent.toml; then
    echo "blacklist usblp" > /etc/modprobe.d/badgeline-no-usblp.conf
    modprobe -r usblp 2>/dev/null || true
else
    rm -f /etc/modprobe.d/badgeline-no-usblp.conf
fi

# 6. The service: enable for every boot, (re)start now with the new code.
install -m 0644 "$FROM/badgeline-agent.service" /etc/systemd/system/badgeline-agent.service
systemctl daemon-reload
systemctl enable badgeline-agent.service
systemctl restart --no-block badgeline-agent.service

mkdir -p "$MARKER_DIR"
date -Is > "$MARKER_DIR/done"
log "done: the agent's status is at http://$(hostname).local:8421/status"
