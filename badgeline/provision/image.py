"""The FAT boot partition inside a Raspberry Pi OS image file, edited without mounting.

Mounting needs root and a loop device, neither of which a tech's laptop (or
CI) reliably has, so the MBR is parsed here and the partition is edited with
pyfatfs at its byte offset in the image.

pyfatfs has two sharp edges this module files off (both seen on images made
with mkfs.vfat + mcopy, which is how the Pi's own images are built):
- lookups are case-sensitive, while the Pi's files are stored as 8.3 names
  with "lower case" flags that pyfatfs lists as `CMDLINE.TXT`; writing
  `cmdline.txt` would create a second file. Every path is resolved
  case-insensitively against the directory listing first.
- overwriting a file with shorter content leaves a broken cluster chain, so a
  write removes the old file and creates a new one.
It also never updates the FSInfo free-cluster hint; that hint is marked
"unknown" on close, which FAT32 allows and fsck.fat accepts as clean.
"""

from __future__ import annotations

import os
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Self

with warnings.catch_warnings():
    # pyfatfs sits on PyFilesystem2 (`fs`), whose package __init__ still calls
    # pkg_resources.declare_namespace: setuptools warns about it on import
    # (DeprecationWarning, and from 80.9 on a UserWarning naming its removal).
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
    from pyfatfs.PyFatFS import PyFatFS

SECTOR_BYTES = 512
# MBR partition types of FAT32 (CHS, LBA) and FAT16 (LBA): the Pi uses 0x0c.
FAT_PARTITION_TYPES = {0x0B, 0x0C, 0x0E, 0x06}
GPT_PROTECTIVE = 0xEE


class ImageError(Exception):
    """The file is not an image we can provision; the message says why."""


@dataclass(frozen=True)
class Partition:
    index: int  # 1-based, as `fdisk -l` numbers it
    type_id: int
    offset: int  # bytes from the start of the image
    size: int  # bytes


def read_partitions(image: Path) -> list[Partition]:
    """The primary partitions of an MBR disk image."""
    try:
        with image.open("rb") as file:
            mbr = file.read(SECTOR_BYTES)
    except OSError as error:  # a typo in the name, a folder, or a card read without sudo
        raise ImageError(f"cannot read {image}: {error.strerror}") from None
    if len(mbr) < SECTOR_BYTES or mbr[510:512] != b"\x55\xaa":
        raise ImageError(f"{image} has no MBR (is it compressed? unpack .img.xz first)")
    partitions = []
    for index in range(4):
        entry = mbr[446 + 16 * index : 446 + 16 * (index + 1)]
        type_id = entry[4]
        first_lba, sectors = struct.unpack_from("<II", entry, 8)
        if type_id == 0 or sectors == 0:
            continue
        if type_id == GPT_PROTECTIVE:
            raise ImageError(f"{image} uses GPT; Raspberry Pi OS images use MBR")
        partitions.append(
            Partition(index + 1, type_id, first_lba * SECTOR_BYTES, sectors * SECTOR_BYTES)
        )
    return partitions


def find_boot_partition(image: Path) -> Partition:
    """The first FAT partition: the Pi's firmware boots from it (`bootfs`)."""
    for partition in read_partitions(image):
        if partition.type_id in FAT_PARTITION_TYPES:
            if _size_of(image) < partition.offset + partition.size:
                raise ImageError(f"{image} is truncated: partition {partition.index} ends past it")
            return partition
    raise ImageError(f"{image} has no FAT partition, so it is not a Raspberry Pi OS image")


def _size_of(image: Path) -> int:
    # Seeking to the end also works for an SD card's block device, whose st_size is 0.
    with image.open("rb") as file:
        return file.seek(0, os.SEEK_END)


class BootPartition:
    """Read and write files on the boot partition; paths are '/'-rooted, any case."""

    def __init__(self, image: Path) -> None:
        self.image = image
        self.partition = find_boot_partition(image)
        self._fs: PyFatFS | None = None

    def __enter__(self) -> Self:
        try:
            self._fs = PyFatFS(str(self.image), offset=self.partition.offset)
        except Exception as error:  # pyfatfs raises bare PyFATException/ValueError
            raise ImageError(f"partition {self.partition.index}: not a FAT file system") from error
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fs is not None:
            self._fs.close()
            self._fs = None
            self._forget_free_cluster_hint()

    @property
    def fs(self) -> PyFatFS:
        assert self._fs is not None, "use BootPartition as a context manager"
        return self._fs

    def resolve(self, path: str) -> str | None:
        """The stored spelling of `path`, matched case-insensitively; None if absent."""
        resolved = "/"
        for part in PurePosixPath(path).parts[1:]:
            if not self.fs.isdir(resolved):
                return None
            names = {name.lower(): name for name in self.fs.listdir(resolved)}
            stored = names.get(part.lower())
            if stored is None:
                return None
            resolved = str(PurePosixPath(resolved) / stored)
        return resolved

    def exists(self, path: str) -> bool:
        return self.resolve(path) is not None

    def listdir(self, path: str = "/") -> list[str]:
        stored = self.resolve(path)
        return sorted(self.fs.listdir(stored)) if stored else []

    def read_bytes(self, path: str) -> bytes:
        stored = self.resolve(path)
        if stored is None:
            raise FileNotFoundError(path)
        data: bytes = self.fs.readbytes(stored)
        return data

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def write_bytes(self, path: str, data: bytes) -> None:
        parent = self._make_parents(PurePosixPath(path).parent)
        existing = self.resolve(path)
        if existing is not None:
            self.fs.remove(existing)
        self.fs.writebytes(str(PurePosixPath(parent) / PurePosixPath(path).name), data)

    def write_text(self, path: str, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def remove(self, path: str) -> None:
        stored = self.resolve(path)
        if stored is not None:
            self.fs.remove(stored)

    def _make_parents(self, directory: PurePosixPath) -> str:
        resolved = "/"
        for part in directory.parts[1:]:
            stored = self.resolve(str(PurePosixPath(resolved) / part))
            if stored is None:
                stored = str(PurePosixPath(resolved) / part)
                self.fs.makedir(stored)
            resolved = stored
        return resolved

    def _forget_free_cluster_hint(self) -> None:
        # FSInfo sector: its number is at offset 48 of the FAT32 boot sector;
        # free count and next-free hint at 488..495. 0xFFFFFFFF means "unknown".
        with self.image.open("r+b") as file:
            file.seek(self.partition.offset)
            boot_sector = file.read(SECTOR_BYTES)
            if boot_sector[82:87] != b"FAT32":
                return
            fsinfo_sector = struct.unpack_from("<H", boot_sector, 48)[0]
            if fsinfo_sector in (0, 0xFFFF):
                return
            file.seek(self.partition.offset + fsinfo_sector * SECTOR_BYTES + 488)
            file.write(b"\xff" * 8)
