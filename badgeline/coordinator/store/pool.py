"""redis-py's connection pool, made cheaper per command for the coordinator.

Commands are packed by hiredis's C packer and sent without a task each
(`HiredisPacking`); the pool waits for a free connection only when every one is
busy (`WaitingConnectionPool`); and script calls share one pipelined connection
(redis_lane.py). Used in the single-server `redis_mode`; cluster and sentinel
modes keep redis-py's own pools (redis_client.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import hiredis
from redis.asyncio import ConnectionPool
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError, MaxConnectionsError, NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.maint_notifications import MaintNotificationsConfig

from badgeline.coordinator.store.lane import FALL_BACK, ScriptLane

# A script call on the pipelined lane that hears nothing from Redis this long
# fails (503), with every call behind it. Far above any script's run time: Redis
# itself answers BUSY to others past its 5 s script limit.
SCRIPT_REPLY_TIMEOUT_S = 30.0


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
