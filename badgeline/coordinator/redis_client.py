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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeAlias

import hiredis
from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import (
    DataError,
    MaxConnectionsError,
    NoScriptError,
    RedisClusterException,
    RedisError,
    ResponseError,
)
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.maint_notifications import MaintNotificationsConfig

from badgeline.coordinator.config import ConfigError, CoordinatorSettings
from badgeline.coordinator.events import log_event
from badgeline.coordinator.keys import VenueKeys
from badgeline.coordinator.redis_lane import FALL_BACK, ScriptLane

RedisClient: TypeAlias = Redis | RedisCluster

# How often the sentinel watcher asks which server is the master. A failover
# takes the sentinels about a second; this bounds the extra writes that can
# still reach the demoted master after they switched.
SENTINEL_POLL_S = 0.25
HEALTH_CHECK_INTERVAL_S = 10
# A script call on the pipelined lane that hears nothing from Redis this long
# fails (503), with every call behind it. Far above any script's run time: Redis
# itself answers BUSY to others past its 5 s script limit.
SCRIPT_REPLY_TIMEOUT_S = 30.0
# A coordinator that starts before its Redis answers waits this long for it, well
# inside systemd's TimeoutStartSec (90 s), then exits for systemd to start it again.
REDIS_START_WAIT_S = 60.0
REDIS_START_RETRY_S = 0.5


class HiredisPacking(AbstractConnection):
    """Packs commands with hiredis's C packer, as redis-py's synchronous client does
    when hiredis is installed; its asyncio client packs in Python, argument by
    argument, which cost ~50 µs of the accept script's 30 arguments (a tenth of a
    submit's CPU, bench/bench_accept.py). hiredis writes str, int, float and bytes
    as redis-py's Encoder does (repr for numbers, UTF-8 strict); anything else
    (bool, None, bytearray, another text encoding) takes redis-py's own path, with
    its errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        encoder = self.encoder
        self._hiredis_packs = encoder.encoding == "utf-8" and encoder.encoding_errors == "strict"

    def pack_command(self, *args: Any) -> list[bytes]:
        if not self._hiredis_packs:
            return super().pack_command(*args)
        # Like redis-py: a command name with a space ('CONFIG GET') goes as two words.
        if isinstance(args[0], str):
            args = (*args[0].encode().split(), *args[1:])
        elif b" " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            return super().pack_command(*args)

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        """Send without a task per command. redis-py bounds every send by
        `socket_timeout` with `asyncio.wait_for`, which on Python 3.11 wraps the write
        in a new Task: 30-60 µs of a command's ~150 here (bench_scale runs 6-7
        commands per job). Only the drain can wait, and only once the socket's buffer
        holds more than its high-water mark; so write, and take redis-py's bounded
        path (same timeout, same errors, connection dropped) only when data is left
        unsent. An error raised here drops the connection as redis-py does."""
        writer = self._writer
        if writer is None or not self.is_connected or isinstance(command, str):
            return await super().send_packed_command(command, check_health)
        if check_health:
            await self.check_health()
        try:
            writer.writelines([command] if isinstance(command, bytes) else command)
            if writer.transport.get_write_buffer_size():
                await asyncio.wait_for(writer.drain(), self.socket_timeout)
            else:
                await writer.drain()  # returns at once; raises if the connection was lost
        except TimeoutError:
            await self.disconnect(nowait=True)
            raise RedisTimeoutError("Timeout writing to socket") from None
        except OSError as error:
            await self.disconnect(nowait=True)
            raise RedisConnectionError(f"Error while writing to socket: {error!r}") from error
        except BaseException:
            # A cancelled or failed send may have left part of a command on the wire.
            await self.disconnect(nowait=True)
            raise

    def detach_stream(self) -> asyncio.StreamWriter:
        """Hand the connected socket over to a new owner (redis_lane.ScriptLane),
        once redis-py's handshake (AUTH, SELECT, TLS) has run on it. redis-py then
        takes this connection for closed: it neither reads nor closes the socket.
        The new owner keeps the writer, whose finaliser would close the socket."""
        writer = self._writer
        if writer is None or not self.is_connected:
            raise RedisConnectionError("no connected socket to hand over")
        self._parser.on_disconnect()
        self._reader = self._writer = None
        return writer


_HIREDIS_PACKING: dict[type[AbstractConnection], type[AbstractConnection]] = {}


def hiredis_packing(connection_class: type[AbstractConnection]) -> type[AbstractConnection]:
    """`connection_class` (TCP, TLS or Unix socket, per the URL) packing with hiredis."""
    if issubclass(connection_class, HiredisPacking):
        return connection_class
    if connection_class not in _HIREDIS_PACKING:
        name = "Hiredis" + connection_class.__name__
        _HIREDIS_PACKING[connection_class] = type(name, (HiredisPacking, connection_class), {})
    return _HIREDIS_PACKING[connection_class]


class WaitingConnectionPool(ConnectionPool):
    """redis-py's pool, except that a command past `max_connections` waits (up to
    `timeout` seconds) for a connection to come back instead of failing with "Too
    many connections": at a few hundred printers, heartbeats, parked long-polls
    and kiosk submits easily have more commands in flight than the pool holds.

    redis-py's BlockingConnectionPool waits too, but enters a Condition and a
    timeout scope on every command, even with idle connections at hand: about
    35 µs of CPU per command here, a fifth of a command's whole cost. This pays
    only when the pool is exhausted. (tests/coordinator/test_redis_pool.py pins the
    behaviour this relies on.)
    """

    def __init__(
        self,
        *,
        timeout: float,
        pipeline_scripts: bool = True,
        script_reply_timeout_s: float = SCRIPT_REPLY_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        # redis-py skips its check for a dead idle connection (one a restarted Redis
        # closed) while maintenance notifications are on, and they are on ("auto")
        # by default: the first command on each such connection then failed (503).
        # The notices come only from Redis Enterprise / Cloud, and nothing here acts
        # on them (the script lane skips push messages).
        kwargs.setdefault("maint_notifications_config", MaintNotificationsConfig(enabled=False))
        super().__init__(**kwargs)
        self.connection_class = hiredis_packing(self.connection_class)
        self._timeout = timeout
        self._returned = asyncio.Condition()
        self._waiting = 0
        # Script calls share one pipelined connection (redis_lane.py) when replies
        # stay bytes and hiredis packs as redis-py would; otherwise the pool's.
        options = self.connection_kwargs
        # A socket_timeout in redis_url bounds script replies too, as it did on
        # pooled connections.
        reply_timeout_s = options.get("socket_timeout") or script_reply_timeout_s
        self._lane = (
            ScriptLane(self.make_connection, reply_timeout_s)
            if pipeline_scripts
            and not options.get("decode_responses")
            and options.get("encoding", "utf-8") == "utf-8"
            and options.get("encoding_errors", "strict") == "strict"
            else None
        )

    def _exhausted(self) -> bool:
        return not self.can_get_connection()

    async def get_connection(self, *args: Any, **kwargs: Any) -> AbstractConnection:
        deadline = None
        while True:
            if self._exhausted():
                loop = asyncio.get_running_loop()
                deadline = deadline or loop.time() + self._timeout
                await self._wait_for_a_return(deadline)
            try:
                return await super().get_connection(*args, **kwargs)
            except MaxConnectionsError:
                continue  # another command took the connection that came back

    async def _wait_for_a_return(self, deadline: float) -> None:
        self._waiting += 1
        try:
            async with asyncio.timeout_at(deadline), self._returned:
                await self._returned.wait_for(lambda: not self._exhausted())
        except TimeoutError:
            raise RedisConnectionError(
                f"no Redis connection came free within {self._timeout:g} s "
                f"(all {self.max_connections} of redis_max_connections busy)"
            ) from None
        finally:
            self._waiting -= 1

    async def release(self, connection: AbstractConnection) -> None:
        await super().release(connection)
        if self._waiting:
            async with self._returned:
                self._returned.notify()

    @property
    def lane(self) -> ScriptLane | None:
        return self._lane

    async def disconnect(self, inuse_connections: bool = True) -> None:
        try:
            await super().disconnect(inuse_connections)
        finally:
            if inuse_connections and self._lane is not None:
                self._lane.close()

    async def evalsha_once(self, sha: str, keys: list[str], args: list[Any]) -> Any:
        """One EVALSHA, around redis-py's client layer: its retry wrapper,
        observability hooks and response-callback lookup cost about a fifth of a
        script call's client CPU here, and EVALSHA has no callback, so the reply is
        the same. It goes on the pipelined lane (redis_lane.py) or else on a pooled
        connection. A script the server does not know (NOSCRIPT) returns
        `FALL_BACK`, and the caller runs it through redis-py, which loads it. A
        connection error or timeout is raised, the connection dropped, as redis-py
        does with this pool (no retries): whether the script ran is unknown, and
        running it again could lease a batch twice or spend a quota twice. The
        caller answers 503 and its client retries through the script's own
        idempotency (an idempotency key, a lease id)."""
        if self._lane is not None:
            return await self._lane.evalsha(sha, keys, args)
        connection = await self.get_connection()
        try:
            # Packing a bad argument raises before anything is sent: the connection is fine.
            command = connection.pack_command("EVALSHA", sha, len(keys), *keys, *args)
            await connection.send_packed_command(command)
            return await connection.read_response()
        except NoScriptError:
            return FALL_BACK
        except (ResponseError, DataError):
            raise  # the script's own error, or a bad argument: the connection is fine
        except BaseException:
            # Failed, timed out or cancelled mid-command: its reply may still come;
            # never reuse the connection.
            await connection.disconnect(nowait=True)
            raise
        finally:
            await self.release(connection)


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
    """A client for `redis_mode`; `url` is redis_url or the embedded server's."""
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
                            socket_timeout=2.0, socket_connect_timeout=2.0)  # fmt: skip
        master = sentinel.master_for(settings.redis_sentinel_master, redis_class=Redis,
                                     health_check_interval=HEALTH_CHECK_INTERVAL_S,
                                     max_connections=settings.redis_max_connections)  # fmt: skip
        return master, SentinelWatch(sentinel, settings.redis_sentinel_master, master)
    assert url is not None
    pool = WaitingConnectionPool.from_url(
        url, max_connections=settings.redis_max_connections,
        timeout=settings.redis_pool_wait_s, health_check_interval=HEALTH_CHECK_INTERVAL_S,
    )  # fmt: skip
    return Redis.from_pool(pool), None  # closing the client closes its pool


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
        except (RedisConnectionError, RedisTimeoutError) as error:  # LOADING included
            if loop.time() >= deadline:
                raise
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
