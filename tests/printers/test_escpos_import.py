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
