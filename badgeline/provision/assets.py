"""The files `badgeline provision` copies onto an image, from this checkout.

They are kept as ordinary files (provisioning/, systemd/) so they can be read,
shellchecked and verified by systemd on their own. setuptools packages only
files inside `badgeline/`, so provisioning runs from a checkout of the
repository (which is also where the wheel for the Pi is built).
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# name on the boot partition's badgeline/ folder -> file in the checkout
ASSETS = {
    "install-agent.sh": Path("provisioning/install-agent.sh"),
    "badgeline-install.service": Path("provisioning/badgeline-install.service"),
    "99-badgeline-printers.rules": Path("provisioning/99-badgeline-printers.rules"),
    "badgeline-agent.service": Path("systemd/badgeline-agent.service"),
}


class AssetsMissing(Exception):
    """Not running from a checkout: the install files are not at hand."""


def load_assets() -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name, relative in ASSETS.items():
        path = REPO_ROOT / relative
        if not path.is_file():
            raise AssetsMissing(
                f"{path} is missing: run `badgeline provision` from a badgeline checkout "
                "(./dev sets one up)"
            )
        found[name] = path.read_bytes()
    return found
