"""The agent's own HTTP client and server (h11 over asyncio streams), on real sockets.

The server side of the client tests is scripted per connection, so that the
faults a long-running agent meets can be made to happen on purpose: a kept
connection the server drops, a request nobody answers, a body over the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import h11
import pytest

from badgeline.agent import http_wire
from badgeline.agent.http_client import BodyTooLarge, HttpClient, HttpFailure
from badgeline.agent.http_server import HttpServer, Reply, Request, json_reply

# An answer: status and body (sent with its Content-Length), and any other headers.
Answer = tuple[int, bytes] | tuple[int, bytes, dict[str, str]]
# What the scripted server does with the n-th request (1-based) on a connection.
Script = Callable[[int, h11.Request], Awaitable[Answer | None]]


class ScriptedServer:
    """Counts connections and answers each request as `script` says (None: hang up)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[tuple[str, bytes]] = []  # (target, body)
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        protocol = h11.Connection(h11.SERVER)
        number = 0
        try:
            while True:
                head, body = None, b""
                while True:
                    event = protocol.next_event()
                    if event is h11.NEED_DATA:
                        protocol.receive_data(await reader.read(65536))
                    elif isinstance(event, h11.Request):
                        head = event
                    elif isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                assert head is not None
                number += 1
                self.requests.append((head.target.decode(), body))
                answer = await self.script(number, head)
                if answer is None:
                    return  # hang up without answering
                status, payload = answer[0], answer[1]
                extra = answer[2] if len(answer) == 3 else {}  # type: ignore[misc]
                headers = [("Content-Length", str(len(payload))), *extra.items()]
                data = protocol.send(h11.Response(status_code=status, headers=headers)) or b""
                if head.method != b"HEAD":
                    data += protocol.send(h11.Data(data=payload)) or b""
                data += protocol.send(h11.EndOfMessage()) or b""
                writer.write(data)
                await writer.drain()
                protocol.start_next_cycle()
        finally:
            writer.close()


def ok(document: object) -> Answer:
    return 200, json.dumps(document).encode()


async def test_requests_reuse_one_kept_alive_connection() -> None:
    async def echo(number: int, request: h11.Request) -> Answer:
        return ok({"number": number, "target": request.target.decode()})

    async with ScriptedServer(echo) as server, HttpClient() as http:
        for expected in range(1, 6):
            response = await http.request("POST", server.url + f"/v1/x?n={expected}",
                                          body=b'{"a":1}', timeout_s=5)  # fmt: skip
            assert response.status == 200
            assert response.json() == {"number": expected, "target": f"/v1/x?n={expected}"}
        assert server.connections == 1
        assert server.requests[0] == ("/v1/x?n=1", b'{"a":1}')


async def test_a_kept_connection_the_server_drops_is_replaced_and_the_request_sent_again() -> None:
    # GIVEN a server that hangs up on the second request of every connection
    # (as one closing an idle keep-alive connection the instant a request arrives)
    async def drop_second(number: int, request: h11.Request) -> Answer | None:
        return None if number == 2 else ok({"number": number})

    async with ScriptedServer(drop_second) as server, HttpClient() as http:
        first = await http.request("GET", server.url + "/a", timeout_s=5)
        # WHEN the next request goes out on the kept connection
        second = await http.request("GET", server.url + "/b", timeout_s=5)
        # THEN it is answered, on a new connection, having been sent twice
        assert first.json() == {"number": 1} and second.json() == {"number": 1}
        assert server.connections == 2
        assert [target for target, _ in server.requests] == ["/a", "/b", "/b"]


async def test_only_idempotent_requests_are_sent_again_after_a_kept_connection_fails() -> None:
    # The server may have read the request and died before answering: a lease
    # (not idempotent) must then fail to its caller, not be sent twice.
    async def drop_second(number: int, request: h11.Request) -> Answer | None:
        return None if number == 2 else ok({"number": number})

    async with ScriptedServer(drop_second) as server, HttpClient() as http:
        await http.request("POST", server.url + "/heartbeat", body=b"{}", timeout_s=5)
        with pytest.raises(HttpFailure, match="kept connection"):
            await http.request("POST", server.url + "/lease", body=b"{}", timeout_s=5)
        assert [target for target, _ in server.requests] == ["/heartbeat", "/lease"]
        await http.request("POST", server.url + "/heartbeat", body=b"{}", timeout_s=5)
        answer = await http.request("POST", server.url + "/ack", body=b"{}", timeout_s=5,
                                    idempotent=True)  # fmt: skip
        assert answer.json() == {"number": 1}
        assert [target for target, _ in server.requests][2:] == ["/heartbeat", "/ack", "/ack"]


async def test_a_connection_idle_too_long_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    async def echo(number: int, request: h11.Request) -> Answer:
        return ok({"number": number})

    monkeypatch.setattr(http_wire, "IDLE_EXPIRY_S", -1.0)  # every kept one is stale
    async with ScriptedServer(echo) as server, HttpClient() as http:
        await http.request("GET", server.url + "/a", timeout_s=5)
        assert (await http.request("GET", server.url + "/b", timeout_s=5)).json() == {"number": 1}
        assert server.connections == 2


async def test_redirects_are_followed_when_asked_and_the_token_stays_with_its_host() -> None:
    async def elsewhere(number: int, request: h11.Request) -> Answer:
        return ok({"authorization": dict(request.headers).get(b"authorization", b"").decode()})

    async with ScriptedServer(elsewhere) as other, HttpClient() as http:

        async def moved(number: int, request: h11.Request) -> Answer:
            if request.target == b"/old.pdf":
                return 302, b"", {"Location": "/new.pdf"}
            if request.target == b"/new.pdf":
                return 301, b"", {"Location": other.url + "/cdn.pdf"}
            return ok({"never": True})

        async with ScriptedServer(moved) as server:
            token = {"Authorization": "Bearer t"}
            unfollowed = await http.request("GET", server.url + "/old.pdf", headers=token,
                                            timeout_s=5)  # fmt: skip
            assert unfollowed.status == 302
            answer = await http.request("GET", server.url + "/old.pdf", headers=token,
                                        timeout_s=5, follow_redirects=True)  # fmt: skip
            assert answer.json() == {"authorization": ""}
            assert [target for target, _ in server.requests][-2:] == ["/old.pdf", "/new.pdf"]


async def test_an_error_answer_is_returned_with_its_body_cut_and_a_head_has_no_body() -> None:
    async def failing(number: int, request: h11.Request) -> Answer:
        return 503, b"x" * (http_wire.ERROR_BODY_CAP * 3)

    async with ScriptedServer(failing) as server, HttpClient() as http:
        answer = await http.request("GET", server.url + "/a.pdf", timeout_s=5, max_body=10)
        assert answer.status == 503 and len(answer.body) == http_wire.ERROR_BODY_CAP
        head = await http.request("HEAD", server.url + "/a.pdf", timeout_s=5, max_body=10)
        assert head.status == 503 and head.body == b""
        assert server.connections == 2  # the cut answer's connection was not reused


async def test_a_fresh_connection_that_is_dropped_is_a_failure_not_a_retry() -> None:
    async def hang_up(number: int, request: h11.Request) -> Answer | None:
        return None

    async with ScriptedServer(hang_up) as server, HttpClient() as http:
        with pytest.raises(HttpFailure):
            await http.request("POST", server.url + "/start", body=b"{}", timeout_s=5)
        assert server.connections == 1 and len(server.requests) == 1


async def test_a_request_nobody_answers_times_out_and_its_connection_is_not_reused() -> None:
    released = asyncio.Event()

    async def silent_first(number: int, request: h11.Request) -> Answer | None:
        if request.target == b"/silent":
            await released.wait()
            return None
        return ok({"number": number})

    async with ScriptedServer(silent_first) as server, HttpClient() as http:
        with pytest.raises(TimeoutError):
            await http.request("GET", server.url + "/silent", timeout_s=0.3)
        released.set()
        answer = await http.request("GET", server.url + "/next", timeout_s=5)
        assert answer.json() == {"number": 1}  # the first request on a new connection
        assert server.connections == 2


async def test_paths_are_escaped_for_the_request_line_and_bad_headers_refused() -> None:
    async def echo(number: int, request: h11.Request) -> Answer:
        return ok({"target": request.target.decode()})

    async with ScriptedServer(echo) as server, HttpClient() as http:
        answer = await http.request("GET", server.url + "/badges/Zoë Smith%2B.pdf?v=1 2",
                                    timeout_s=5)  # fmt: skip
        assert answer.json() == {"target": "/badges/Zo%C3%AB%20Smith%2B.pdf?v=1%202"}
        with pytest.raises(HttpFailure, match="cannot send"):
            await http.request("GET", server.url + "/x", headers={"X-Bad": "a\r\nb"},
                               timeout_s=5)  # fmt: skip


async def test_refused_connections_and_bad_urls_are_failures_that_say_where() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    async with HttpClient() as http:
        with pytest.raises(HttpFailure, match=f"127.0.0.1:{port}"):
            await http.request("GET", f"http://127.0.0.1:{port}/", timeout_s=5)
        with pytest.raises(HttpFailure, match="not an http"):
            await http.request("GET", "ftp://example.org/badge.pdf", timeout_s=5)


async def test_a_body_over_the_limit_is_refused_from_its_declared_length() -> None:
    async def large(number: int, request: h11.Request) -> Answer:
        return 200, b"%" * 5000

    async with ScriptedServer(large) as server, HttpClient() as http:
        with pytest.raises(BodyTooLarge):
            await http.request("GET", server.url + "/big.pdf", timeout_s=5, max_body=4096)
        answer = await http.request("GET", server.url + "/big.pdf", timeout_s=5, max_body=5000)
        assert len(answer.body) == 5000
        assert server.connections == 2  # the refused answer's connection was closed


@contextlib.asynccontextmanager
async def serving(handler: Callable[[Request], Awaitable[Reply]]) -> AsyncIterator[HttpServer]:
    server = HttpServer(handler, "127.0.0.1", 0)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def test_the_server_answers_keeps_alive_heads_and_survives_a_failing_handler() -> None:
    seen: list[Request] = []

    async def handler(request: Request) -> Reply:
        seen.append(request)
        if request.path == "/boom":
            raise RuntimeError("a bug in one handler")
        return json_reply({"path": request.path, "body": request.body.decode()})

    async with serving(handler) as server, aiohttp.ClientSession() as session:
        base = f"http://127.0.0.1:{server.port}"
        async with session.post(base + "/x?y=1", data=b"hello") as response:
            assert response.status == 200
            assert await response.json() == {"path": "/x", "body": "hello"}
        async with session.head(base + "/x") as response:
            assert response.status == 200 and int(response.headers["Content-Length"]) > 0
            assert await response.read() == b""
        async with session.get(base + "/boom") as response:
            assert response.status == 500
        async with session.get(base + "/after") as response:
            assert (await response.json())["path"] == "/after"
        assert {request.remote for request in seen} == {"127.0.0.1"}


async def test_closing_the_server_ends_idle_kept_alive_connections_at_once() -> None:
    async def handler(request: Request) -> Reply:
        return json_reply({"ok": True})

    async with HttpClient() as http:
        async with serving(handler) as server:
            url = f"http://127.0.0.1:{server.port}/healthz"
            assert (await http.request("GET", url, timeout_s=5)).status == 200
            # the client keeps that connection; closing must not wait for it to idle out
            await asyncio.wait_for(server.close(), timeout=5)
        with pytest.raises(HttpFailure):
            await http.request("GET", url, timeout_s=5)


async def test_the_server_answers_a_malformed_or_oversized_request_with_a_4xx() -> None:
    async def handler(request: Request) -> Reply:
        return json_reply({"ok": True})

    async with serving(handler) as server:
        for raw, status in ((b"NOT HTTP\r\n\r\n", b"400"),
                            (b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 70000\r\n\r\n"
                             + b"x" * 70000, b"413")):  # fmt: skip
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(raw)
            answer = await asyncio.wait_for(reader.read(), timeout=5)  # read to the close
            writer.close()
            assert answer.split(b" ")[1] == status, answer[:80]
