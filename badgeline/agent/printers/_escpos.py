"""Import python-escpos once per process, on first use, without its side effects.

Why lazily: importing ``escpos.printer`` parses a large capabilities file
(about 0.5 s and 10 MB here, seconds on a Pi). Only the USB link and an
``escpos_profile`` in the agent's config need it; network, emulator and
device links write their bytes themselves and never import it.

Why carefully: ``escpos.capabilities`` runs, at import time,
``environ.get("ESCPOS_CAPABILITIES_PICKLE_DIR", mkdtemp())``, so every import
leaves a directory (holding a pickle cache) in /tmp, even when that variable is
set, because the default argument is evaluated first. On an SD card that
restarts the agent on every failure, those pile up. It also calls
``logging.basicConfig()``, which would pin the root logger's configuration
before the agent configures its own. We record the directories the importing
thread creates and remove them afterwards (the cache is only read during the
import), and give the root logger a placeholder handler for the duration of
the import so ``basicConfig`` does nothing.
"""

from __future__ import annotations

import importlib
import logging
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_loaded: EscposApi | None = None


@dataclass(frozen=True)
class EscposApi:
    """The parts of python-escpos and pyusb the printer links use."""

    printer: ModuleType  # escpos.printer: Network, Usb, File
    device_not_found: type[Exception]  # escpos.exceptions.DeviceNotFoundError
    usb_core: ModuleType  # usb.core: USBError, USBTimeoutError, NoBackendError
    usb_util: ModuleType  # usb.util: endpoint direction and type helpers


def escpos_api() -> EscposApi:
    """Return python-escpos, importing it on the first call only (thread-safe)."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _import_escpos()
        return _loaded


def _import_escpos() -> EscposApi:
    # Imported here, not at the top: tempfile and shutil (with the bz2 and lzma
    # modules shutil loads) cost 0.8 MB, and only a USB link or a profile gets here.
    import shutil
    import tempfile

    importing_thread = threading.get_ident()
    created: list[str] = []
    original_mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args: Any, **kwargs: Any) -> Any:
        path = original_mkdtemp(*args, **kwargs)
        # Other threads may call mkdtemp meanwhile: only ours are escpos's to remove.
        if threading.get_ident() == importing_thread:
            created.append(path)
        return path

    root = logging.getLogger()
    placeholder = None if root.handlers else logging.NullHandler()
    if placeholder is not None:
        root.addHandler(placeholder)
    tempfile.mkdtemp = recording_mkdtemp
    try:
        printer = importlib.import_module("escpos.printer")
        exceptions = importlib.import_module("escpos.exceptions")
    finally:
        tempfile.mkdtemp = original_mkdtemp
        if placeholder is not None:
            root.removeHandler(placeholder)
        for path in created:
            shutil.rmtree(path, ignore_errors=True)
    return EscposApi(
        printer=printer,
        device_not_found=exceptions.DeviceNotFoundError,
        usb_core=importlib.import_module("usb.core"),
        usb_util=importlib.import_module("usb.util"),
    )


def profile_width(profile_name: str) -> int:
    """The paper width in dots that python-escpos's capability database gives a profile."""
    escpos_api()  # imports escpos.capabilities without its side effects (see _escpos)
    from escpos import capabilities

    try:
        profile = capabilities.get_profile(profile_name)
    except KeyError:
        raise ValueError(
            f"escpos_profile {profile_name!r} is not a python-escpos profile"
        ) from None
    pixels = profile.profile_data.get("media", {}).get("width", {}).get("pixels")
    if not isinstance(pixels, int):
        raise ValueError(
            f"escpos_profile {profile_name!r} does not say its width in dots; set width_dots"
        )
    return pixels
