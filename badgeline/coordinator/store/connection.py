"""Connects the coordinator to Redis: one server, a Redis Cluster, or the master
that a set of Sentinels names (`redis_mode`, docs/config.md).

Cluster: every key of a venue carries the venue's hash tag (keys.py), so each
script runs whole on the one master that owns the venue's slot. redis-py's
`RedisCluster` routes EVALSHA by its keys, sends SCRIPT LOAD to every master and
reloads on NOSCRIPT (script_loader.py). Wake-ups stay classic PUBLISH, which a
cluster forwards to every node over its bus: the subscription may sit on any
node and survives a node's loss by resubscribing elsewhere (wakeups.py).

Sentinel: each new connection asks the sentinels for the master. Connections
already open to a master that the sentinels have just demoted would keep writing
to it until the sentinels reconfigure it as a replica (seconds later), and those
writes would vanish in its resync; a watcher therefore polls the sentinels and
drops every connection the moment the master they name changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeAlias
from urllib.parse import unquote, urlsplit

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel
from redis.exceptions import AuthenticationError as RedisAuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from badgeline.coordinator.config import ConfigError, CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.pool import WaitingConnectionPool
from badgeline.log import log_event

RedisClient: TypeAlias = Redis | RedisCluster

# How often the sentinel watcher asks which server is the master. A failover
# takes the sentinels about a second; this bounds the extra writes that can
# still reach the demoted master after they switched.
SENTINEL_POLL_S = 0.25
HEALTH_CHECK_INTERVAL_S = 10
# A coordinator that starts before its Redis answers waits this long for it, well
# inside systemd's TimeoutStartSec (90 s), then exits for systemd to start it again.
REDIS_START_WAIT_S = 60.0
REDIS_START_RETRY_S = 0.5


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


class SentinelWatch:
    """Drops the pool's connections when the sentinels name another master."""

    def __init__(self, sentinel: Sentinel, master_name: str, client: Redis) -> None:
        self._sentinel = sentinel
        self._master_name = master_name
        self._client = client
        self._task: asyncio.Task[None] | None = None

    async def check(self) -> None:
        """At start-up: the sentinels must know a healthy master of that name."""
        try:
            host, port = await self._sentinel.discover_master(self._master_name)
        except MasterNotFoundError as error:
            raise ConfigError(
                f"no sentinel of redis_sentinels names a healthy master "
                f"{self._master_name!r}: {error}"
            ) from error
        log_event("redis_sentinel_master", master=self._master_name, address=f"{host}:{port}")

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch(), name="sentinel-watch")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for client in self._sentinel.sentinels:  # the connections to the sentinels
            await client.aclose()

    async def _watch(self) -> None:
        known: tuple[str, int] | None = None
        while True:
            try:
                address = await self._sentinel.discover_master(self._master_name)
            except RedisError as error:  # no sentinel answers: keep what we have
                log_event("sentinel_unreachable", logging.WARNING, error=str(error))
                address = known
            if known is not None and address != known:
                log_event("redis_master_switched", logging.WARNING,
                          master=self._master_name, was=f"{known[0]}:{known[1]}",
                          now=f"{address[0]}:{address[1]}" if address else "")  # fmt: skip
                # In-use connections too: a long-poll's pub/sub or a request
                # mid-flight on the old master retries on the new one.
                await self._client.connection_pool.disconnect(inuse_connections=True)
            known = address
            await asyncio.sleep(SENTINEL_POLL_S)


def connect(
    settings: CoordinatorSettings, url: str | None
) -> tuple[RedisClient, SentinelWatch | None]:
    """A client for `redis_mode`; `url` is redis_url or the embedded server's (with the
    password of `redis_password_file` put in, when one is set)."""
    url = settings.redis_url_with_password(url)
    if settings.redis_mode == "cluster":
        assert url is not None  # the settings validator requires redis_url
        extra = [ClusterNode(*_host_port(a)) for a in settings.redis_cluster_nodes]
        cluster = RedisCluster.from_url(
            url, startup_nodes=extra, health_check_interval=HEALTH_CHECK_INTERVAL_S,
            max_connections=settings.redis_max_connections,
        )  # fmt: skip
        return cluster, None
    if settings.redis_mode == "sentinel":
        assert settings.redis_sentinel_master is not None  # validated with the settings
        sentinel = Sentinel([_host_port(a) for a in settings.redis_sentinels],
                            sentinel_kwargs=_sentinel_login(settings),
                            socket_timeout=2.0, socket_connect_timeout=2.0)  # fmt: skip
        master = sentinel.master_for(settings.redis_sentinel_master, redis_class=Redis,
                                     health_check_interval=HEALTH_CHECK_INTERVAL_S,
                                     max_connections=settings.redis_max_connections,
                                     **_master_login(settings.redis_url_with_password(
                                         settings.redis_url)))  # fmt: skip
        return master, SentinelWatch(sentinel, settings.redis_sentinel_master, master)
    assert url is not None
    pool = WaitingConnectionPool.from_url(
        url, max_connections=settings.redis_max_connections,
        timeout=settings.redis_pool_wait_s, health_check_interval=HEALTH_CHECK_INTERVAL_S,
    )  # fmt: skip
    return Redis.from_pool(pool), None  # closing the client closes its pool


def _sentinel_login(settings: CoordinatorSettings) -> dict[str, Any]:
    """What the connections to the sentinels themselves take: their own password (a
    sentinel's requirepass is not the master's) and TLS as redis_url says."""
    login: dict[str, Any] = {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
    if settings.redis_sentinel_password_file is not None:
        password = settings.redis_sentinel_password_file.read_text(encoding="utf-8").strip()
        login["password"] = password
    if settings.redis_url is not None and urlsplit(settings.redis_url).scheme == "rediss":
        login["ssl"] = True
    return login


def _master_login(url: str | None) -> dict[str, Any]:
    """What a sentinel-found master's connections take from redis_url: TLS, login, db."""
    if url is None:
        return {}
    parts = urlsplit(url)
    login: dict[str, Any] = {"db": int(parts.path.strip("/") or 0)}
    if parts.username:
        login["username"] = unquote(parts.username)
    if parts.password:
        login["password"] = unquote(parts.password)
    if parts.scheme == "rediss":
        login["ssl"] = True  # the pool then makes sentinel-managed TLS connections
    return login


async def check_topology(client: RedisClient, settings: CoordinatorSettings) -> None:
    """Refuse to start on a server that is not what `redis_mode` says it is
    (Sentinel: SentinelWatch.check)."""
    venue_key = VenueKeys(settings.venue).sequence
    if isinstance(client, RedisCluster):
        try:
            await client.initialize()
        except RedisClusterException as error:
            if "not enabled" in str(error):
                raise ConfigError(
                    "redis_mode is cluster but the server at redis_url is not a cluster node"
                ) from error
            raise
        node = client.get_node_from_key(venue_key)
        log_event("redis_cluster_connected", masters=len(client.get_primaries()),
                  venue_slot=client.keyslot(venue_key),
                  venue_master=node.name if node else "")  # fmt: skip
        return
    cluster_info = await client.info("cluster")
    if int(cluster_info.get("cluster_enabled", 0)) == 1:
        raise ConfigError(
            'redis_url names a Redis Cluster node: set redis_mode = "cluster" to use the cluster'
        )


class RedisUnreachableAtStart(RedisConnectionError):
    """Redis did not answer within REDIS_START_WAIT_S of start-up (main.py: one line, exit 1)."""


async def _once_reachable(check: Callable[[], Awaitable[None]], url: str | None) -> None:
    """Run `check` until Redis answers it. A coordinator started while its Redis is
    down or still loading its AOF (a venue server booting, a Redis restart) waits
    for it, with one log line, instead of exiting with a traceback for systemd to
    restart every 2 s. Past REDIS_START_WAIT_S the last error is raised."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REDIS_START_WAIT_S
    waiting = False
    while True:
        try:
            await check()
        except RedisAuthenticationError as error:
            # Waiting would not change a password: say so now, in one line.
            raise ConfigError(
                f"Redis at {_redacted(url)} refused the coordinator's login ({error}): "
                "give redis_url the server's user and password (redis://user:password@host/0)"
            ) from error
        except (RedisConnectionError, RedisTimeoutError) as error:  # LOADING included
            if loop.time() >= deadline:
                raise RedisUnreachableAtStart(
                    f"Redis at {_redacted(url)} did not answer within {REDIS_START_WAIT_S:g} s: "
                    f"{error} (check redis_url, and that the server runs)"
                ) from error
            if not waiting:
                log_event("redis_unreachable_at_start", logging.WARNING, url=_redacted(url),
                          error=str(error), waiting_s=REDIS_START_WAIT_S)  # fmt: skip
                waiting = True
            await asyncio.sleep(REDIS_START_RETRY_S)
        else:
            if waiting:
                log_event("redis_reachable", url=_redacted(url))
            return


def _redacted(url: str | None) -> str:
    """`url` without its password, for the log."""
    if not url or "@" not in url:
        return url or ""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://***@{rest.rpartition('@')[2]}"


@contextlib.asynccontextmanager
async def connected(settings: CoordinatorSettings, url: str | None) -> AsyncIterator[RedisClient]:
    """A checked client for the coordinator's lifetime (main.py, tests, benchmarks)."""
    client, watch = connect(settings, url)
    try:
        if watch is not None:
            await watch.check()
            watch.start()
        else:
            await _once_reachable(lambda: check_topology(client, settings), url)
        yield client
    finally:
        if watch is not None:
            await watch.aclose()
        await client.aclose()
