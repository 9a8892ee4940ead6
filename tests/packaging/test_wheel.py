"""The built wheel: clean build, its metadata, and `badgeline provision` from an install.

Needs git, network access to the package index (or pip's cache) and, for the image,
dosfstools and mtools (`./dev test` installs them).
"""

from __future__ import annotations

import re
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.field.pi_images import BOOKWORM_CMDLINE, CONFIG_TXT, build_image, fsck, mtools_read
from tests.packaging.conftest import REPO_ROOT, BuiltWheel, InstalledWheel

pytestmark = pytest.mark.timeout(600)  # the first build fills pip's cache
FILES = REPO_ROOT / "badgeline" / "provision" / "files"
# Lines of pip's own that are not the build's: find-links locations this machine's
# pip configuration names and does not have.
PIP_NOISE = re.compile(r"WARNING: Location '.*' is ignored")


def metadata(wheel: Path) -> tuple[dict[str, list[str]], list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        text = archive.read("badgeline-0.1.0.dist-info/METADATA").decode()
    fields: dict[str, list[str]] = {}
    for key, value in Parser().parsestr(text, headersonly=True).items():
        fields.setdefault(key, []).append(value)
    return fields, names


def test_the_wheel_builds_without_a_setuptools_warning(built_wheel: BuiltWheel) -> None:
    # GIVEN the build log of `pip wheel -v` (the build backend's output included)
    lines = [line for line in built_wheel.build_log.splitlines() if not PIP_NOISE.search(line)]
    assert any("Created wheel for badgeline" in line for line in lines)
    # THEN no warning category and no deprecation appears in it
    warned = [line for line in lines if re.search(r"\w+Warning\b|deprecat", line, re.I)]
    assert warned == []


def test_the_wheel_states_its_license_and_where_it_fits(built_wheel: BuiltWheel) -> None:
    # GIVEN the wheel's metadata
    fields, names = metadata(built_wheel.path)
    # THEN the license is one SPDX expression, the file ships, and the classifiers say what it is
    assert fields["License-Expression"] == ["Apache-2.0"]
    assert "License" not in fields  # the deprecated free-text field
    assert fields["License-File"] == ["LICENSE"]
    assert "badgeline-0.1.0.dist-info/licenses/LICENSE" in names
    assert "Apache License" in (REPO_ROOT / "LICENSE").read_text()
    classifiers = fields["Classifier"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Topic :: Printing" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: the expression
    # AND it says where the project lives, its docs and its issues
    urls = dict(url.split(", ", 1) for url in fields["Project-URL"])
    assert set(urls) >= {"Homepage", "Documentation", "Issues"}
    assert all(url.startswith("https://github.com/badgeline/badgeline") for url in urls.values())
    # AND the base requirements are what every part imports: no HTTP server, no Redis client
    assert [r for r in fields["Requires-Dist"] if "extra ==" not in r] == ["pydantic<3,>=2.7"]


def test_the_install_files_ship_inside_the_package(built_wheel: BuiltWheel) -> None:
    # GIVEN the wheel's file list
    _, names = metadata(built_wheel.path)
    # THEN every file of badgeline/provision/files/ is in it, and nothing from tests/
    shipped = {n.removeprefix("badgeline/provision/files/") for n in names
               if n.startswith("badgeline/provision/files/")}  # fmt: skip
    assert shipped == {p.name for p in FILES.iterdir()}
    assert {"install-agent.sh", "badgeline-agent.service", "badgeline-redis.service"} <= shipped
    assert not [n for n in names if n.startswith("tests/")]


def test_provision_runs_from_the_installed_wheel(installed_wheel: InstalledWheel) -> None:
    # GIVEN a venv holding only the wheel and its extras (no checkout on its path)
    where = installed_wheel.run(
        str(installed_wheel.venv / "bin" / "python"), "-I", "-c",
        "import badgeline.provision.assets as a; print(a.FILES)",
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed_wheel.venv)
    # WHEN the tech asks for help THEN they get it
    helped = installed_wheel.run(str(installed_wheel.badgeline), "provision", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--enrolment-code" in helped.stdout
    # WHEN they provision a Bookworm image with the wheel they built
    image = build_image(
        installed_wheel.workdir / "printer-05.img",
        {"cmdline.txt": BOOKWORM_CMDLINE, "config.txt": CONFIG_TXT},
    )
    wheel = installed_wheel.wheel.path
    result = installed_wheel.run(
        str(installed_wheel.badgeline), "provision", str(image),
        "--printer-id", "printer-05", "--printer", "network:10.0.0.21:9100",
        "--enrolment-code", "AAAAbbbbCCCCdddd_EEEE-ffff", "--wheel", str(wheel),
    )  # fmt: skip
    # THEN it succeeds, and the image holds the package's files byte for byte, and the wheel
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("done: ")
    for name in ("install-agent.sh", "badgeline-install.service",
                 "99-badgeline-printers.rules", "badgeline-agent.service"):  # fmt: skip
        assert mtools_read(image, f"badgeline/{name}") == (FILES / name).read_bytes()
    assert mtools_read(image, f"badgeline/wheels/{wheel.name}") == wheel.read_bytes()
    config = tomllib.loads(mtools_read(image, "badgeline/agent.toml").decode())
    assert config["printer_id"] == "printer-05"
    assert config["printer"] == {"kind": "network", "host": "10.0.0.21", "port": 9100}
    firstrun = mtools_read(image, "firstrun.sh").decode()
    assert "systemctl enable badgeline-install.service" in firstrun
    fsck(image)
