"""Loads the Lua scripts (one file per atomic operation) once per process.

A file is named `<operation>-<number of KEYS>.lua` (the BullMQ convention) and
may use the helpers in `includes/` (`common.lua` first, then the others by
name), which are prepended here. redis-py's
`Script` calls EVALSHA and reloads the script on NOSCRIPT (after a Redis restart
or failover), so callers never see a missing script. On a Redis Cluster the
EVALSHA goes to the master owning its keys (one slot: the venue's) and the reload
goes to every master (redis_client.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from redis.commands.core import AsyncScript

from badgeline.coordinator.store.connection import RedisClient
from badgeline.coordinator.store.lane import FALL_BACK
from badgeline.coordinator.store.pool import WaitingConnectionPool

_SCRIPTS_PACKAGE = "badgeline.coordinator.store.scripts"


@dataclass(frozen=True)
class LoadedScript:
    name: str
    key_count: int
    script: AsyncScript
    # One server (redis_mode "single"): calls go straight onto a pooled connection.
    # Looked up once here, not on every call.
    pool: WaitingConnectionPool | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        pool = getattr(self.script.registered_client, "connection_pool", None)
        if isinstance(pool, WaitingConnectionPool):
            object.__setattr__(self, "pool", pool)  # frozen dataclass

    async def __call__(self, keys: list[str], args: list[Any]) -> Any:
        if len(keys) != self.key_count:
            raise ValueError(f"{self.name} takes {self.key_count} keys, got {len(keys)}")
        if self.pool is not None:
            reply = await self.pool.evalsha_once(self.script.sha, keys, args)
            if reply is not FALL_BACK:
                return reply
        return await self.script(keys=keys, args=args)


def _read(name: str) -> str:
    return resources.files(_SCRIPTS_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def _includes() -> str:
    folder = resources.files(_SCRIPTS_PACKAGE).joinpath("includes")
    names = sorted(e.name for e in folder.iterdir() if e.name.endswith(".lua"))
    # Later includes call common.lua's helpers: Lua needs a local defined before use.
    names.sort(key=lambda name: name != "common.lua")
    return "\n".join(_read("includes/" + name) for name in names)


def load_scripts(redis: RedisClient) -> dict[str, LoadedScript]:
    common = _includes()
    loaded: dict[str, LoadedScript] = {}
    for entry in resources.files(_SCRIPTS_PACKAGE).iterdir():
        if not entry.name.endswith(".lua"):
            continue
        operation, _, key_count = entry.name.removesuffix(".lua").rpartition("-")
        source = common + "\n" + entry.read_text(encoding="utf-8")
        loaded[operation] = LoadedScript(operation, int(key_count), redis.register_script(source))
    return loaded
