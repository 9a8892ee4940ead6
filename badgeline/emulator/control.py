"""The emulator's control API: what tests and the demo use to jam, slow and read the printer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError

from badgeline.emulator.media import Media
from badgeline.emulator.state import Fault, PrinterCondition
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.models import StrictModel

if TYPE_CHECKING:
    from badgeline.emulator.server import PrinterEmulator

_Body = TypeVar("_Body", bound=BaseModel)
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_HTTP_ERROR_CODES = {
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.BODY_TOO_LARGE,
}


class FaultChange(StrictModel):
    fault: Fault


class SpeedChange(StrictModel):
    ms_per_badge: int = Field(ge=0, le=PrinterCondition.MAX_MS_PER_BADGE)


class MediaChange(StrictModel):
    """What to load; a field left out keeps what is loaded."""

    dpi: int | None = Field(default=None, ge=1)
    width_dots: int | None = Field(default=None, ge=1)
    length_dots: int | None = Field(default=None, ge=0)


class ControlApi:
    def __init__(self, emulator: PrinterEmulator) -> None:
        self._emulator = emulator

    async def status(self, request: web.Request) -> web.Response:
        return web.json_response(self._emulator.status())

    async def set_fault(self, request: web.Request) -> web.Response:
        change = await _parse(request, FaultChange)
        try:
            self._emulator.fault = change.fault
        except ValueError as error:
            raise _field_error("fault", str(error)) from None
        return web.json_response(self._emulator.status())

    async def media(self, request: web.Request) -> web.Response:
        return web.json_response(self._emulator.media_status())

    async def set_media(self, request: web.Request) -> web.Response:
        change = await _parse(request, MediaChange)
        loaded = self._emulator.media
        try:
            self._emulator.media = Media(
                dpi=loaded.dpi if change.dpi is None else change.dpi,
                width_dots=loaded.width_dots if change.width_dots is None else change.width_dots,
                length_dots=loaded.length_dots if change.length_dots is None
                else change.length_dots,
            )  # fmt: skip
        except ValueError as error:
            raise _field_error("media", str(error)) from None
        return web.json_response(self._emulator.media_status())

    async def set_speed(self, request: web.Request) -> web.Response:
        change = await _parse(request, SpeedChange)
        self._emulator.ms_per_badge = change.ms_per_badge
        return web.json_response(self._emulator.status())

    async def printed(self, request: web.Request) -> web.Response:
        return web.json_response(self._emulator.printed_rows())

    async def reset(self, request: web.Request) -> web.Response:
        self._emulator.reset()
        return web.json_response(self._emulator.status())


def create_control_app(emulator: PrinterEmulator) -> web.Application:
    api = ControlApi(emulator)
    app = web.Application(middlewares=[_error_bodies])
    app.router.add_get("/status", api.status)
    app.router.add_post("/fault", api.set_fault)
    app.router.add_post("/speed", api.set_speed)
    app.router.add_get("/media", api.media)
    app.router.add_post("/media", api.set_media)
    app.router.add_get("/printed", api.printed)
    app.router.add_post("/reset", api.reset)
    return app


async def _parse(request: web.Request, model: type[_Body]) -> _Body:
    raw = await request.read()
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        raise _as_badgeline_error(error) from None


def _field_error(field: str, message: str) -> BadgelineError:
    fields = [{"loc": [field], "msg": message}]
    return BadgelineError(ErrorCode.VALIDATION_FAILED, message, fields=fields)


def _as_badgeline_error(error: ValidationError) -> BadgelineError:
    problems = error.errors(include_url=False)
    if any(problem["type"] == "json_invalid" for problem in problems):
        return BadgelineError(ErrorCode.MALFORMED_JSON, "the body is not valid JSON")
    fields = [{"loc": list(problem["loc"]), "msg": problem["msg"]} for problem in problems]
    return BadgelineError(ErrorCode.VALIDATION_FAILED, "the body is not valid", fields=fields)


@web.middleware
async def _error_bodies(request: web.Request, handler: _Handler) -> web.StreamResponse:
    """Answer every error in the project's one error shape."""
    try:
        return await handler(request)
    except BadgelineError as error:
        return web.json_response(error.body(), status=error.http_status)
    except web.HTTPException as error:
        code = _HTTP_ERROR_CODES.get(error.status)
        if code is None:
            raise
        body = BadgelineError(code, error.reason).body()
        # A 405 must still say which methods the path takes.
        allow = {"Allow": error.headers["Allow"]} if "Allow" in error.headers else None
        return web.json_response(body, status=error.status, headers=allow)
