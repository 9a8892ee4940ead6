"""python-escpos is imported lazily, once, and leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHECK = """
import json, logging, os, sys
import badgeline.agent.printers
lazy = "escpos" not in sys.modules
from badgeline.agent.printers._escpos import escpos_api
api = escpos_api()
import escpos.capabilities as capabilities
print(json.dumps({
    "lazy": lazy,
    "same_api": escpos_api() is api,
    "temp_dir_left": os.path.exists(capabilities.pickle_dir),
    "root_handlers": len(logging.getLogger().handlers),
}))
"""


def test_escpos_loads_on_first_use_and_leaves_no_temp_dir() -> None:
    # GIVEN a fresh interpreter (escpos imports once per process)
    env = {k: v for k, v in os.environ.items() if k != "ESCPOS_CAPABILITIES_PICKLE_DIR"}
    # WHEN it imports the printer package, then first uses escpos
    result = subprocess.run(
        [sys.executable, "-c", CHECK],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    facts = json.loads(result.stdout)
    # THEN escpos was not imported with the package, is loaded once, its capabilities
    # cache directory is gone, and it did not configure the root logger
    assert facts == {"lazy": True, "same_api": True, "temp_dir_left": False, "root_handlers": 0}


WITHOUT_ESCPOS = """
import json, socket, sys, tempfile, threading
from badgeline.agent.printers import (
    DeviceConnection, DeviceLink, NetworkConnection, NetworkLink, probe_health)
server = socket.create_server(("127.0.0.1", 0))
link = NetworkLink(NetworkConnection(host="127.0.0.1", port=server.getsockname()[1]))
link.write(b"\\x1b@badge")
peer, _ = server.accept()
received = peer.recv(64)
query = b"\\x10\\x04\\x01"
# A healthy printer's reply to DLE EOT 1, once the query has arrived.
threading.Thread(target=lambda: peer.recv(3) and peer.sendall(b"\\x12")).start()
reply = link.read_status(query)
link.close()
with tempfile.NamedTemporaryFile() as node:
    device = DeviceLink(DeviceConnection(path=node.name))
    device.write(b"\\x1b@badge")
    health = probe_health(device)
    device.close()
    written = open(node.name, "rb").read()
print(json.dumps({
    "received": received.decode("latin-1"), "reply": reply.hex(), "written": written.decode(),
    "device_health": health.detail, "escpos": "escpos" in sys.modules, "usb": "usb" in sys.modules,
}))
"""


def test_network_and_device_links_never_import_escpos_or_pyusb() -> None:
    # GIVEN a fresh interpreter
    # WHEN a network link and a device link each send a job, and status is read back
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_ESCPOS], capture_output=True, text=True, timeout=60,
        check=True,
    )  # fmt: skip
    facts = json.loads(result.stdout)
    # THEN the bytes went through both, and neither python-escpos nor pyusb was imported
    assert facts["received"].startswith("\x1b@badge") and facts["reply"] == "12"
    assert facts["written"] == "\x1b@badge"
    assert "cannot report status" in facts["device_health"]
    assert (facts["escpos"], facts["usb"]) == (False, False)
