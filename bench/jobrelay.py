"""TCP relays in front of printer emulators that note when each badge's first byte passed.

    python bench/jobrelay.py TARGET_PORT [TARGET_PORT ...]

Runs as a process of its own (so its work shares no GIL with the load generator):
it prints one JSON line with the port it listens on for each target, then reads
commands on stdin, one per line:

- `dump`: print one JSON line {footer id: Unix time of that badge's first byte};
- `reset`: forget what was seen;
- end of input: exit.

A badge starts with `ESC @` and ends with its footer line `job <id>` (what the
agent prints, and what the CUPS jobs of `vs_cups.py` carry), so on each
connection the first `ESC @` after the previous footer marks the next badge's
first byte. Bytes from the printer back to the client are passed on untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import sys
import time
from typing import Any

ESC_INIT = b"\x1b@"
FOOTER = re.compile(rb"job ([A-Za-z0-9_-]{4,64})\n")
TAIL_BYTES = 80  # longer than a footer line, so one split across two reads is found
CHUNK = 65536


class JobWatch:
    """The badges of one connection's byte stream, as (footer id, first byte time)."""

    def __init__(self, seen: dict[str, float]) -> None:
        self.seen = seen
        self.start: float | None = None
        self.tail = b""

    def feed(self, data: bytes, now: float) -> None:
        buffer = self.tail + data
        position = 0
        while True:
            if self.start is None:
                found = buffer.find(ESC_INIT, position)
                if found < 0:
                    break
                self.start, position = now, found + len(ESC_INIT)
            match = FOOTER.search(buffer, position)
            if match is None:
                break
            self.seen.setdefault(match.group(1).decode(), self.start)
            self.start, position = None, match.end()
        self.tail = buffer[max(position, len(buffer) - TAIL_BYTES) :]


class Relays:
    def __init__(self, targets: list[int]) -> None:
        self.targets = targets
        self.seen: dict[str, float] = {}
        self.ports: list[int] = []
        # The event loop holds tasks weakly: a connection's task must not vanish mid-job.
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        for target in self.targets:
            server = await asyncio.start_server(functools.partial(self._serve, target=target),
                                                "127.0.0.1", 0)  # fmt: skip
            self.ports.append(server.sockets[0].getsockname()[1])

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: int
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            writer.close()
            return
        watch = JobWatch(self.seen)
        await asyncio.gather(
            self._pump(reader, up_writer, watch),
            self._pump(up_reader, writer, None),
            return_exceptions=True,
        )
        for each in (writer, up_writer):
            each.close()

    @staticmethod
    async def _pump(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, watch: JobWatch | None
    ) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(CHUNK):
                if watch is not None:
                    watch.feed(data, time.time())
                writer.write(data)
                await writer.drain()
        # Pass the half-close on: CUPS's socket backend waits for the printer's EOF.
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()


async def serve(targets: list[int]) -> None:
    relays = Relays(targets)
    await relays.start()
    print(json.dumps(relays.ports), flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        command = line.strip()
        if command == "dump":
            print(json.dumps(relays.seen), flush=True)
        elif command == "reset":
            relays.seen.clear()
    # Leave without cancelling the open connections' tasks one by one (each would
    # log its CancelledError): the parent is done with them.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(serve([int(port) for port in sys.argv[1:]]))
