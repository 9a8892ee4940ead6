"""A private CUPS scheduler for benchmarks, and the one IPP request they need.

`PrivateCupsd` runs Debian's `cupsd` in the foreground with its own
cups-files.conf and cupsd.conf in a temporary directory: its own spool, state,
logs and port on 127.0.0.1, no browsing, no web interface, no job history, no
job limit. The system's CUPS (if any) is neither used nor touched. Queues
are added with `lpadmin` against that port: raw `socket://` queues, or queues
with one of CUPS's own drivers (a PPD it generates from a `.drv` file, e.g.
`drv:///sample.drv/zebra.ppd`, the ZPL driver `rastertolabel`).

`print_job` sends an IPP Print-Job (RFC 8011) from an aiohttp session, so that
many jobs can be submitted in parallel without a process per job: with
`document-format application/vnd.cups-raw` (the default) it is what
`lp -o raw` does; with `application/pdf`, what `lp badge.pdf` does (CUPS
converts and rasterises the PDF through the queue's filters).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import struct
import subprocess
import time
import urllib.request
from pathlib import Path

import aiohttp

INSTALL_HINT = (
    "CUPS is not installed: `apt-get install --no-install-recommends cups cups-client` "
    "(Debian/Ubuntu; the bench starts its own cupsd, the system one need not run)"
)
# IPP value tags and operation ids (RFC 8011 section 5.4, and CUPS's extensions).
_OPERATION_ATTRIBUTES, _END_OF_ATTRIBUTES = 0x01, 0x03
_TAG_NAME, _TAG_URI, _TAG_CHARSET, _TAG_LANGUAGE, _TAG_MIME = 0x42, 0x45, 0x47, 0x48, 0x49
_PRINT_JOB = 0x0002
_request_ids = itertools.count(1)


def missing_tools() -> list[str]:
    return [tool for tool in ("cupsd", "lpadmin", "cupsenable", "cupsaccept", "lpstat", "cancel")
            if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]  # fmt: skip


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class PrivateCupsd:
    def __init__(self, root: Path, port: int) -> None:
        self.root = root.resolve()
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def server(self) -> str:
        return f"127.0.0.1:{self.port}"

    def queue_url(self, name: str, kind: str = "printers") -> str:
        return f"http://{self.server}/{kind}/{name}"

    def _write_config(self) -> tuple[Path, Path]:
        for sub in ("spool", "tmp", "cache", "state", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # Filters run as user lp and write their temporary files here (Ghostscript
        # rasterising a PDF does): sticky and open to all, as /tmp is.
        (self.root / "tmp").chmod(0o1777)
        files = self.root / "cups-files.conf"
        files.write_text("\n".join([
            f"ServerRoot {self.root}", f"RequestRoot {self.root / 'spool'}",
            f"TempDir {self.root / 'tmp'}", f"CacheDir {self.root / 'cache'}",
            f"StateDir {self.root / 'state'}", "ServerBin /usr/lib/cups",
            "DataDir /usr/share/cups", f"AccessLog {self.root / 'log' / 'access_log'}",
            f"ErrorLog {self.root / 'log' / 'error_log'}",
            f"PageLog {self.root / 'log' / 'page_log'}", "FileDevice No", "",
        ]))  # fmt: skip
        daemon = self.root / "cupsd.conf"
        # Everything from 127.0.0.1 is allowed; only warnings are logged, so the
        # scheduler does no more logging per job than badgeline's processes do.
        daemon.write_text("\n".join([
            "LogLevel warn", f"Listen {self.server}", "Browsing No", "DefaultAuthType None",
            "WebInterface No", "MaxJobs 0", "MaxClients 1000", "MaxClientsPerHost 1000",
            "PreserveJobHistory No", "PreserveJobFiles No",
            "<Location />", "  Order allow,deny", "  Allow all", "</Location>",
            "<Policy default>", "  JobPrivateAccess all", "  JobPrivateValues none",
            "  SubscriptionPrivateAccess all", "  SubscriptionPrivateValues none",
            "  <Limit All>", "    Order deny,allow", "  </Limit>", "</Policy>", "",
        ]))  # fmt: skip
        return daemon, files

    def start(self) -> None:
        if missing_tools():
            raise RuntimeError(INSTALL_HINT)
        daemon, files = self._write_config()
        log = (self.root / "cupsd.out").open("wb")
        self.process = subprocess.Popen(
            [_tool("cupsd"), "-f", "-c", str(daemon), "-s", str(files)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"cupsd exited at start-up: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://{self.server}/", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"cupsd did not answer on {self.server}: {self.log_tail()}")

    def log_tail(self) -> str:
        texts = []
        for name in ("cupsd.out", "log/error_log"):
            path = self.root / name
            if path.exists():
                texts.append(path.read_text(errors="replace")[-2000:])
        return "\n".join(texts)

    def admin(self, tool: str, *args: str) -> None:
        env = {**os.environ, "CUPS_SERVER": self.server}
        subprocess.run([_tool(tool), *args], env=env, check=True, capture_output=True)

    def add_raw_socket_printer(self, name: str, port: int, class_name: str | None) -> None:
        """A raw queue (no PPD, no filters) sending each job to 127.0.0.1:port."""
        self.admin("lpadmin", "-p", name, "-E", "-v", f"socket://127.0.0.1:{port}")
        if class_name:
            self.admin("lpadmin", "-p", name, "-c", class_name)

    def add_driver_printer(
        self, name: str, port: int, class_name: str | None, model: str, *options: str
    ) -> None:
        """A queue with one of CUPS's own drivers (`lpadmin -m model`, e.g.
        `drv:///sample.drv/zebra.ppd`) sending to 127.0.0.1:port; `options` are the
        queue's defaults (`PageSize=w288h216`)."""
        defaults = [argument for option in options for argument in ("-o", option)]
        self.admin("lpadmin", "-p", name, "-E", "-v", f"socket://127.0.0.1:{port}",
                   "-m", model, *defaults)  # fmt: skip
        if class_name:
            self.admin("lpadmin", "-p", name, "-c", class_name)

    def pending_jobs(self) -> int:
        """Jobs not yet completed (held, pending or processing), from `lpstat -o`."""
        env = {**os.environ, "CUPS_SERVER": self.server}
        listing = subprocess.run([_tool("lpstat"), "-o"], env=env, capture_output=True,
                                 text=True, check=False)  # fmt: skip
        return len(listing.stdout.splitlines())

    def cancel_all(self) -> None:
        self.admin("cancel", "-a")

    def enable(self, name: str) -> None:
        self.admin("cupsenable", name)
        self.admin("cupsaccept", name)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _attribute(tag: int, name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (struct.pack(">BH", tag, len(raw_name)) + raw_name
            + struct.pack(">H", len(raw_value)) + raw_value)  # fmt: skip


RAW = "application/vnd.cups-raw"


def print_job_request(
    printer_uri: str, job_name: str, document: bytes, document_format: str = RAW
) -> bytes:
    header = struct.pack(">BBHI", 2, 0, _PRINT_JOB, next(_request_ids))
    attributes = b"".join([
        bytes([_OPERATION_ATTRIBUTES]),
        _attribute(_TAG_CHARSET, "attributes-charset", "utf-8"),
        _attribute(_TAG_LANGUAGE, "attributes-natural-language", "en"),
        _attribute(_TAG_URI, "printer-uri", printer_uri),
        _attribute(_TAG_NAME, "requesting-user-name", "bench"),
        _attribute(_TAG_NAME, "job-name", job_name),
        _attribute(_TAG_MIME, "document-format", document_format),
        bytes([_END_OF_ATTRIBUTES]),
    ])  # fmt: skip
    return header + attributes + document


async def print_job(
    session: aiohttp.ClientSession,
    queue_url: str,
    job_name: str,
    document: bytes,
    document_format: str = RAW,
) -> int:
    """Submit one job; returns the IPP status code (0 = successful-ok)."""
    printer_uri = queue_url.replace("http://", "ipp://", 1)
    body = print_job_request(printer_uri, job_name, document, document_format)
    async with session.post(queue_url, data=body,
                            headers={"Content-Type": "application/ipp"}) as response:  # fmt: skip
        reply = await response.read()
        if response.status != 200 or len(reply) < 8:
            return -response.status
        status: int = struct.unpack(">H", reply[2:4])[0]
        return status
