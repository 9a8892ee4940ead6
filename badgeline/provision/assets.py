"""The files `badgeline provision` copies onto an image, shipped inside the package.

They are kept as ordinary files in `badgeline/provision/files/` (package data in
the wheel) so they can be read, shellchecked and verified by systemd on their
own, and so `badgeline provision` works the same from a checkout and from an
installed wheel. The folder also holds the venue server's units
(badgeline-coordinator.service, badgeline-redis.service), which provisioning
does not copy.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

FILES: Traversable = files("badgeline.provision") / "files"

# Each is written to the boot partition's badgeline/ folder under its own name.
ASSETS = (
    "install-agent.sh",
    "badgeline-install.service",
    "99-badgeline-printers.rules",
    "badgeline-agent.service",
)


class AssetsMissing(Exception):
    """The package's install files are not where it was installed (a broken install)."""


def load_assets() -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name in ASSETS:
        path = FILES / name
        if not path.is_file():
            raise AssetsMissing(
                f"{path} is missing from the installed badgeline package: reinstall it "
                "(pip install --force-reinstall badgeline-*.whl)"
            )
        found[name] = path.read_bytes()
    return found
