"""Small Raspberry Pi OS look-alike images, built the way the real ones are.

An MBR with a FAT32 `bootfs` partition (type 0x0c) and a Linux root partition
entry, formatted with mkfs.vfat and filled with mcopy (dosfstools and mtools,
as pi-gen does), so the files carry the same 8.3 names with lower-case flags
that trip naive FAT writers. mtools also reads the result back: an independent
FAT implementation checks what pyfatfs wrote.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

SECTOR = 512
BOOT_START = 8192  # sectors: 4 MiB in, as on real images
BOOT_SECTORS = 64 * 2**20 // SECTOR
ROOT_SECTORS = 2 * 2**20 // SECTOR

BOOKWORM_CMDLINE = (
    "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 "
    "fsck.repair=yes rootwait quiet init=/usr/lib/raspberrypi-sys-mods/firstboot\n"
)
CONFIG_TXT = "# http://rptl.io/configtxt\ndtparam=audio=on\ncamera_auto_detect=1\narm_64bit=1\n"


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is missing: apt-get install -y {package}"
    return found


def build_image(path: Path, files: dict[str, str]) -> Path:
    """An image file with an MBR, a FAT32 boot partition holding `files`, and a root entry."""
    root_start = BOOT_START + BOOT_SECTORS
    with path.open("wb") as image:
        image.truncate((root_start + ROOT_SECTORS) * SECTOR)
        entries = [
            struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x0C, b"\0\0\0", BOOT_START, BOOT_SECTORS),
            struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", root_start, ROOT_SECTORS),
        ]
        image.seek(446)
        image.write(b"".join(entries))
        image.seek(510)
        image.write(b"\x55\xaa")
    subprocess.run(
        [tool("mkfs.vfat", "dosfstools"), "-F", "32", "-n", "BOOTFS", "--offset",
         str(BOOT_START), str(path), str(BOOT_SECTORS * SECTOR // 1024)],
        check=True, capture_output=True,
    )  # fmt: skip
    staging = path.parent / (path.name + ".files")
    staging.mkdir()
    for name, text in files.items():
        (staging / name).write_text(text)
        subprocess.run(
            [tool("mcopy", "mtools"), "-i", f"{path}@@{BOOT_START * SECTOR}",
             str(staging / name), f"::/{name}"],
            check=True, capture_output=True,
        )  # fmt: skip
    return path


def mtools_read(path: Path, name: str) -> bytes:
    """A file from the boot partition, as mtools (not pyfatfs) reads it."""
    result = subprocess.run(
        [tool("mtype", "mtools"), "-i", f"{path}@@{BOOT_START * SECTOR}", f"::/{name}"],
        check=True, capture_output=True,
    )  # fmt: skip
    return result.stdout


def mtools_list(path: Path, folder: str = "/") -> list[str]:
    result = subprocess.run(
        [tool("mdir", "mtools"), "-b", "-i", f"{path}@@{BOOT_START * SECTOR}", f"::{folder}"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return sorted(line.rstrip("/").rsplit("/", 1)[-1] for line in result.stdout.split())


def fsck(path: Path) -> str:
    """fsck.fat -n on the boot partition: raises unless the file system is clean."""
    partition = path.parent / (path.name + ".bootfs")
    with path.open("rb") as image, partition.open("wb") as out:
        image.seek(BOOT_START * SECTOR)
        out.write(image.read(BOOT_SECTORS * SECTOR))
    result = subprocess.run(
        [tool("fsck.fat", "dosfstools"), "-n", "-v", str(partition)],
        capture_output=True, text=True,
    )  # fmt: skip
    partition.unlink()
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
