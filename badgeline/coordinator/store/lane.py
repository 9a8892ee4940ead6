"""Script calls of one coordinator process, pipelined on one Redis connection.

On a pooled connection each script call pays for itself: a connection checkout,
its own send, and its own read and wake-up when the reply comes. On this 2-core
machine that was ~129 µs of coordinator CPU and ~54 µs of Redis CPU per call
(50 callers in one process, bench/bench_script_lane.py), and a submit makes one
call, a job's life about six. Here the calls made in one turn of the event loop
leave in one write, and the replies that arrive together are handed out in one
read: ~14 and ~11 µs. Redis runs one connection's commands in order and
answers them in order, so the n-th reply belongs to the n-th call; with
appendfsync always it still answers a write only after its fsync.

What a caller sees is what it saw on a pooled connection (redis_pool.py,
WaitingConnectionPool.evalsha_once): the script's reply, its error raised, or
FALL_BACK for a script the server does not know. A call whose connection drops
before its reply fails with a connection error and is never sent again: it may
have run; so does every waiting call when Redis sends nothing for the reply
timeout (30 s, or redis_url's socket_timeout). The next call opens a new
connection. RESP3 push messages are skipped: they answer no call. Only EVALSHA
goes here: pub/sub and every other command keep their pooled connections.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import hiredis
from redis._parsers.base import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

# What the caller gets instead of a NOSCRIPT error: "load it and call again".
FALL_BACK = object()
_NOT_YET = object()  # hiredis: no whole reply buffered yet


class DetachableConnection(Protocol):
    """A redis-py connection that can hand over its socket after connecting
    (redis_pool.HiredisPacking)."""

    async def connect(self) -> None: ...

    async def disconnect(self, nowait: bool = False) -> None: ...

    def detach_stream(self) -> asyncio.StreamWriter: ...


class ScriptLane:
    """Sends EVALSHA calls on one connection, opening a new one when it is lost."""

    def __init__(
        self, new_connection: Callable[[], DetachableConnection], reply_timeout_s: float
    ) -> None:
        self._new_connection = new_connection
        self._reply_timeout_s = reply_timeout_s
        self._current: _PipelinedConnection | None = None
        self._connecting: asyncio.Future[_PipelinedConnection] | None = None
        self._closed = False
        self.connections_opened = 0  # a reconnect is visible to tests

    @property
    def connected(self) -> bool:
        return self._current is not None and not self._current.lost

    async def evalsha(self, sha: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            command = hiredis.pack_command(("EVALSHA", sha, len(keys), *keys, *args))
        except TypeError:
            # Something hiredis does not pack (bytearray, bool, None): redis-py's
            # own path packs it, or refuses it with its DataError.
            return FALL_BACK
        connection = self._current
        if connection is None or connection.lost:
            connection = await self._connect()
        return await connection.call(command)

    async def _connect(self) -> _PipelinedConnection:
        """One attempt at a time, shared by every call that needs it: while Redis is
        down, the calls waiting fail together instead of each trying in turn."""
        if self._closed:
            raise RedisConnectionError("the coordinator closed its Redis connections")
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._open())
            self._connecting.add_done_callback(self._connect_done)
        # Shielded: a caller that gives up does not cancel the others' attempt.
        return await asyncio.shield(self._connecting)

    async def _open(self) -> _PipelinedConnection:
        connection = self._new_connection()
        # Bounded like a reply: a server that accepts but never answers (stopped; a
        # black hole) would otherwise hold every call sharing this attempt forever.
        try:
            async with asyncio.timeout(self._reply_timeout_s):
                await connection.connect()  # redis-py's handshake: AUTH, SELECT, TLS
        except BaseException as error:
            await connection.disconnect(nowait=True)
            if isinstance(error, TimeoutError):
                raise RedisTimeoutError(
                    f"no answer from Redis to a new connection within {self._reply_timeout_s:g} s"
                ) from None
            raise
        opened = _PipelinedConnection(connection.detach_stream(), self._reply_timeout_s)
        if self._closed:
            opened.fail(RedisConnectionError("the coordinator closed its Redis connections"))
        self._current = opened
        self.connections_opened += 1
        return opened

    def _connect_done(self, attempt: asyncio.Future[_PipelinedConnection]) -> None:
        self._connecting = None
        if not attempt.cancelled():
            attempt.exception()  # retrieved here too, in case every caller gave up

    def close(self) -> None:
        self._closed = True
        if self._current is not None:
            self._current.fail(RedisConnectionError("the coordinator closed its Redis connections"))


class _PipelinedConnection(asyncio.Protocol):
    """One socket: calls leave in the order they were made, replies come back in it."""

    def __init__(self, stream: asyncio.StreamWriter, reply_timeout_s: float) -> None:
        self._reader = hiredis.Reader(
            # redis-py's own error mapping: a caller catches the same exception
            # types (NoScriptError, ReadOnlyError, BusyLoadingError, …) as on the pool.
            protocolError=InvalidResponse, replyError=BaseParser.parse_error,
            notEnoughData=_NOT_YET,
        )  # fmt: skip
        self._unsent: list[bytes] = []
        self._awaiting: deque[asyncio.Future[Any]] = deque()
        self.lost = False
        # A server that stops answering (stopped, or gone without a FIN) would
        # hold every call forever: past reply_timeout_s without a byte from Redis
        # while calls wait, the connection is given up and they fail.
        self._reply_timeout_s = reply_timeout_s
        self._heard_at = 0.0
        self._watchdog: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()
        self._stream = stream  # kept: its finaliser closes the socket
        self._transport = stream.transport
        self._transport.set_protocol(self)

    def call(self, command: bytes) -> asyncio.Future[Any]:
        loop = self._loop
        if self.lost:  # lost between the caller's check and now, or closed at birth
            raise RedisConnectionError("connection to Redis lost; the script was not sent")
        if not self._awaiting:
            self._heard_at = loop.time()  # the silence starts with the first call waiting
            if self._watchdog is None:
                self._watchdog = loop.call_at(self._heard_at + self._reply_timeout_s,
                                              self._check_silence)  # fmt: skip
        if not self._unsent:  # the first call of this turn of the loop sends them all
            loop.call_soon(self._send)
        self._unsent.append(command)
        reply: asyncio.Future[Any] = loop.create_future()
        self._awaiting.append(reply)
        # A cancelled caller leaves its reply to be read and dropped: the call was
        # (or will be) sent, and the replies behind it keep their order.
        return reply

    def _send(self) -> None:
        unsent, self._unsent = self._unsent, []
        if not self.lost:  # else its calls have already failed
            self._transport.writelines(unsent)

    def _check_silence(self) -> None:
        self._watchdog = None
        if self.lost or not self._awaiting:
            return
        silent_s = self._loop.time() - self._heard_at
        if silent_s >= self._reply_timeout_s:
            self.fail(RedisTimeoutError(
                f"no reply from Redis for {silent_s:.1f} s; whether the waiting "
                "scripts ran is unknown"))  # fmt: skip
        else:
            self._watchdog = self._loop.call_at(self._heard_at + self._reply_timeout_s,
                                                self._check_silence)  # fmt: skip

    def data_received(self, data: bytes) -> None:
        self._heard_at = self._loop.time()
        self._reader.feed(data)
        try:
            while (reply := self._reader.gets()) is not _NOT_YET:
                if isinstance(reply, hiredis.PushNotification):
                    continue  # RESP3 out-of-band (tracking, maintenance): no call's reply
                if not self._awaiting:
                    raise InvalidResponse("Redis sent a reply no script call awaited")
                waiter = self._awaiting.popleft()
                if waiter.done():  # its caller was cancelled
                    continue
                if isinstance(reply, NoScriptError):
                    waiter.set_result(FALL_BACK)
                elif isinstance(reply, Exception):
                    waiter.set_exception(reply)
                else:
                    waiter.set_result(reply)
        except InvalidResponse as error:  # the stream is out of step: nothing on it is safe
            self.fail(RedisConnectionError(f"unreadable reply from Redis: {error}"))

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f" ({exc!r})" if exc else ""
        self.fail(RedisConnectionError(
            f"connection to Redis lost before the script's reply{reason}; "
            "whether it ran is unknown"))  # fmt: skip

    def fail(self, error: RedisError) -> None:
        """Every call still waiting fails with `error`, and the socket is closed."""
        self.lost = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        self._unsent = []
        awaiting, self._awaiting = self._awaiting, deque()
        for waiter in awaiting:
            if not waiter.done():
                waiter.set_exception(error)
        self._transport.abort()
