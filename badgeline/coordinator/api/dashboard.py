"""The operator dashboard at `GET /`: sign-in, a live SSE snapshot, static assets.

Sign-in trades the operator token for a session (sessions.py): a random secret in
an HttpOnly, SameSite=Strict cookie, which Redis holds only hashed, so that
nothing read from Redis can be used or turned into a session.

The page's actions call the ordinary JSON API; the stream reuses the operator
routes' handlers, so the page shows the same JSON the CLI does.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import time
from pathlib import Path

from aiohttp import web

from badgeline.coordinator.api import dashboard_snapshot
from badgeline.coordinator.api.context import SESSION_IDENTITY, authenticate, coordinator_of
from badgeline.coordinator.api.dashboard_snapshot import build_snapshot
from badgeline.coordinator.api.http import (
    AUTH_CHALLENGE,
    CORRELATION_HEADER,
    correlation_id,
    refuse_declared_oversize,
)
from badgeline.coordinator.api.sessions import (
    CSRF_HEADER,
    SESSION_COOKIE,
    SESSION_TTL_S,
    create_session,
    end_session,
    load_session,
    session_middleware,
)
from badgeline.protocol.errors import BadgelineError, ErrorCode

routes = web.RouteTableDef()

STATIC_DIR = Path(__file__).parent / "static"
# A push every second keeps heartbeat ages honest; a queue wake-up pushes sooner.
STREAM_INTERVAL_S = 1.0
STREAM_MIN_GAP_S = 0.2
# The page's script is a few ES modules (no build step), its style one sheet.
SCRIPTS = ("dashboard.js", "api.js", "dom.js", "printers.js", "reports.js", "charts.js",
           "jobs.js", "freshness.js")  # fmt: skip
ASSETS = {name: "text/javascript" for name in SCRIPTS} | {"dashboard.css": "text/css"}
# Why the page sent the operator back to sign in: a fixed list, never the query's text.
SIGNED_OUT_MESSAGES = {
    "session": "Your dashboard session has ended (signed out elsewhere, or it expired). "
               "Sign in again.",
    "action": "Your dashboard session had ended, so your last action was not done. "
              "Sign in again, then repeat it.",
}  # fmt: skip
PAGE_HEADERS = {
    # Inline script and framing are refused: an injected string cannot run and
    # the action buttons cannot be click-jacked from another site.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STREAMS_CLOSING = web.AppKey("dashboard_streams_closing", asyncio.Event)


# ---- pages and assets


def _page(name: str, status: int = 200, message: str = "") -> web.Response:
    text = (STATIC_DIR / name).read_text(encoding="utf-8")
    text = text.replace("<!--message-->", html.escape(message))
    # A refused sign-in is a 401 like any other: it names the scheme (the
    # browser shows no prompt for Bearer, only for Basic).
    headers = PAGE_HEADERS | AUTH_CHALLENGE if status == 401 else PAGE_HEADERS
    return web.Response(text=text, status=status, content_type="text/html",
                        headers=headers)  # fmt: skip


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    if SESSION_IDENTITY not in request:
        why = SIGNED_OUT_MESSAGES.get(request.query.get("ended", ""), "")
        return _page("login.html", message=why)
    return _page("index.html")


@routes.get("/dashboard/static/{name}")
async def asset(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in ASSETS:  # a fixed list: no path ever reaches the filesystem unchecked
        raise BadgelineError(ErrorCode.NOT_FOUND, f"no asset {name[:80]!r}")
    return web.Response(text=(STATIC_DIR / name).read_text(encoding="utf-8"),
                        content_type=ASSETS[name],
                        headers={"Cache-Control": "no-cache",
                                 "X-Content-Type-Options": "nosniff"})  # fmt: skip


@routes.post("/dashboard/login")
async def login(request: web.Request) -> web.Response:
    coordinator = coordinator_of(request)
    refuse_declared_oversize(request, request.client_max_size, "the sign-in form")
    token = (await request.post()).get("token")
    if not isinstance(token, str) or not token.strip():
        return _page("login.html", 401, "Paste the operator token to sign in.")
    try:
        identity = coordinator.auth.identify("Bearer " + token.strip())
    except BadgelineError:
        return _page("login.html", 401, "That token is not known to this coordinator.")
    if identity.role != "operator":
        return _page("login.html", 403, f"That is a {identity.role} token; "
                     "the dashboard needs an operator token.")  # fmt: skip
    old = request.cookies.get(SESSION_COOKIE)
    if old:  # a fresh id at every sign-in: a planted cookie cannot be promoted
        await end_session(coordinator, old)
    session_id = await create_session(coordinator, token.strip())
    response = web.Response(status=303, headers={"Location": "/", "Cache-Control": "no-store"})
    response.set_cookie(SESSION_COOKIE, session_id, max_age=SESSION_TTL_S, path="/",
                        httponly=True, samesite="Strict", secure=request.secure)  # fmt: skip
    return response


@routes.post("/dashboard/logout")
async def logout(request: web.Request) -> web.Response:
    # The middleware already refused a cookie without the CSRF header.
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id and SESSION_IDENTITY in request:
        await end_session(coordinator_of(request), session_id)
    response = web.json_response({"signed_out": True}, headers={"Cache-Control": "no-store"})
    response.del_cookie(SESSION_COOKIE, path="/")
    return response


@routes.get("/dashboard/session")
async def session_info(request: web.Request) -> web.Response:
    """The page's CSRF token; same-origin script is the only reader that can see it."""
    session_id = request.cookies.get(SESSION_COOKIE)
    session = None
    if session_id and SESSION_IDENTITY in request:
        session = await load_session(coordinator_of(request), session_id)
    if session is None:
        raise BadgelineError(ErrorCode.UNAUTHORIZED, "not signed in to the dashboard")
    return web.json_response(
        {"operator": session.identity.name, "csrf_token": session.csrf_token,
         "csrf_header": CSRF_HEADER, "expires_in_s": session.expires_in_s},
        headers={"Cache-Control": "no-store"},
    )  # fmt: skip


# ---- the live snapshot


@routes.get("/dashboard/snapshot")
async def snapshot(request: web.Request) -> web.Response:
    authenticate(request, "operator")
    return web.json_response(await build_snapshot(request),
                             headers={"Cache-Control": "no-store"})  # fmt: skip


async def _until_change_or_tick(request: web.Request, printer_ids: list[str]) -> None:
    """Return after STREAM_INTERVAL_S, or sooner when a printer's queue gains work
    (the agents' wake-up channel) or the app is shutting down."""
    coordinator = coordinator_of(request)
    with contextlib.ExitStack() as stack:
        events = [stack.enter_context(coordinator.wakeups.waiter(p)) for p in printer_ids]
        events.append(request.app[STREAMS_CLOSING])
        waits = [asyncio.ensure_future(event.wait()) for event in events]
        try:
            await asyncio.wait(waits, timeout=STREAM_INTERVAL_S,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        finally:
            for wait in waits:
                wait.cancel()


async def _still_signed_in(request: web.Request) -> bool:
    """A stream outlives its first check: a sign-out or an expired session ends it."""
    if SESSION_IDENTITY not in request:
        return True  # a Bearer token is checked once, like any other request
    session_id = request.cookies.get(SESSION_COOKIE, "")
    return await load_session(coordinator_of(request), session_id) is not None


@routes.get("/dashboard/stream")
async def stream(request: web.Request) -> web.StreamResponse:
    """Server-sent events: one `snapshot` event per push, the whole picture each time,
    so a reconnecting page needs no replay."""
    authenticate(request, "operator")
    response = web.StreamResponse(headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",  # a reverse proxy must not hold events back
        # Sent now: the correlation middleware's header would come after prepare().
        CORRELATION_HEADER: correlation_id(request),
    })  # fmt: skip
    await response.prepare(request)
    closing = request.app[STREAMS_CLOSING]
    with contextlib.suppress(ConnectionResetError):
        await response.write(b"retry: 2000\n\n")
        while not closing.is_set() and await _still_signed_in(request):
            body = await build_snapshot(request)
            data = json.dumps(body, default=str, separators=(",", ":"))
            await response.write(f"event: snapshot\ndata: {data}\n\n".encode())
            pushed = time.monotonic()
            await _until_change_or_tick(request, [p["printer_id"] for p in body["printers"]])
            # A burst of accepts must not turn into a burst of snapshots.
            await asyncio.sleep(max(0.0, pushed + STREAM_MIN_GAP_S - time.monotonic()))
    return response


async def _close_streams(app: web.Application) -> None:
    # Streams never end by themselves: without this, shutdown waits its full timeout.
    app[STREAMS_CLOSING].set()


def setup(app: web.Application) -> None:
    """Mount the dashboard on the coordinator app (see create_app)."""
    app[STREAMS_CLOSING] = asyncio.Event()
    dashboard_snapshot.install(app)
    app.middlewares.append(session_middleware)
    app.on_shutdown.append(_close_streams)
    app.add_routes(routes)
