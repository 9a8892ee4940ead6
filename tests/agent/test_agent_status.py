"""The agent's local status endpoint over real sockets: /healthz, /status, /test-print
(printed at the emulator, refused from a non-loopback address, never in the middle of a
badge), and the heartbeat interval the coordinator asks for."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from redis.asyncio import Redis

from badgeline.agent.loops.heartbeat import clamp_heartbeat_interval
from badgeline.agent.status_endpoint import is_loopback
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.discovery.names import local_ipv4_addresses
from badgeline.emulator import PrinterEmulator
from badgeline.emulator.state import Fault
from badgeline.log import EVENT_LOGGER
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.relay import ReplyHoldingRelay
from tests.helpers import wait_for


async def test_healthz_and_status_describe_a_running_agent(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a running agent that has printed one badge
    emulator: PrinterEmulator = await start_emulator()
    agent = await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    job_id = await kiosk.submit(badge_ref, "printer-a")
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    base = f"http://127.0.0.1:{agent.status_port}"
    async with aiohttp.ClientSession() as session:
        # WHEN a tech asks it how it is
        async with session.get(base + "/healthz") as response:
            assert response.status == 200
            assert await response.json() == {"ok": True}
        async with session.get(base + "/status") as response:
            assert response.status == 200
            status = await response.json()
        # (and a wrong path or method is told so, without troubling the agent)
        async with session.get(base + "/nope") as response:
            assert response.status == 404
        async with session.get(base + "/test-print") as response:
            assert response.status == 405 and response.headers["Allow"] == "POST"
    # THEN it tells the printer's health, the journal, the coordinator and itself
    assert status["printer_id"] == "printer-a" and status["version"] == "0.1.0"
    assert status["uptime_s"] > 0 and status["stopping"] is False
    assert status["loops_not_running"] == []
    printer = status["printer"]
    assert printer["kind"] == "emulator" and printer["ready"] is True
    assert printer["reachable"] is True and printer["paper"] == "ok" and printer["probed_at"]
    assert status["journal"]["acked"] == 1 and status["journal_error"] is None
    assert status["coordinator"] == {
        "url": coordinator.url, "source": "config", "venue": None, "reachable": True,
        "last_answer_at": status["coordinator"]["last_answer_at"], "last_problem": None,
    }  # fmt: skip
    assert status["coordinator"]["last_answer_at"].endswith("+00:00")
    assert status["mdns"] == {"enabled": False}

    # AND Prometheus reads the same numbers from /metrics, paper running low included
    emulator.fault = Fault.PAPER_LOW
    await wait_for(lambda: _paper_is(agent, "low"))
    async with aiohttp.ClientSession() as session, session.get(base + "/metrics") as response:
        assert response.status == 200
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(await response.text())
            for sample in family.samples
        }
    me = ("printer", "printer-a")
    assert samples[("badgeline_agent_up", (me,))] == 1
    assert samples[("badgeline_agent_printer_ready", (me,))] == 1
    assert samples[("badgeline_agent_coordinator_reachable", (me,))] == 1
    assert samples[("badgeline_agent_journal_jobs", (me, ("state", "acked")))] == 1
    assert samples[("badgeline_agent_paper", (("level", "low"), me))] == 1
    assert samples[("badgeline_agent_paper", (("level", "ok"), me))] == 0
    # AND its own counts: one badge printed after its grant, timed, none failed
    printed, failed = (me, ("result", "printed")), (me, ("result", "failed"))
    assert samples[("badgeline_agent_prints_total", printed)] == 1
    assert samples[("badgeline_agent_prints_total", failed)] == 0
    assert samples[("badgeline_agent_print_duration_seconds_count", printed)] == 1
    assert samples[("badgeline_agent_print_duration_seconds_sum", printed)] > 0
    inf = (("le", "+Inf"), ("printer", "printer-a"), ("result", "printed"))
    assert samples[("badgeline_agent_print_duration_seconds_bucket", inf)] == 1
    assert samples[("badgeline_agent_build_info", (me, ("version", "0.1.0")))] == 1
    assert samples[("process_resident_memory_bytes", ())] > 0


async def test_status_shows_an_unreachable_coordinator_and_the_last_error(
    coordinator: LiveCoordinator, start_emulator: Any, run_agent: Any, tmp_path: Path
) -> None:
    # GIVEN an agent whose coordinator goes away
    emulator: PrinterEmulator = await start_emulator()
    agent = await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    await wait_for(lambda: _reachable(agent, True))
    await coordinator.stop()
    # WHEN the agent has noticed
    await wait_for(lambda: _reachable(agent, False))
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{agent.status_port}/status") as response,
    ):
        status = await response.json()
    # THEN /status says so, with the problem, and the last error the agent logged
    assert status["coordinator"]["reachable"] is False
    assert status["coordinator"]["last_problem"]  # disconnected, then refused
    assert status["last_error"]["event"] == "link_down"
    assert status["last_error"]["level"] == "warning" and status["last_error"]["problem"]
    # AND the agent itself is still healthy: its loops run, backing off
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{agent.status_port}/healthz") as response,
    ):
        assert response.status == 200


async def test_a_test_print_from_the_pi_itself_prints_at_the_printer_not_via_the_coordinator(
    coordinator: LiveCoordinator, start_emulator: Any, run_agent: Any, tmp_path: Path
) -> None:
    # GIVEN a running agent whose coordinator is away (a test print must not need it)
    emulator: PrinterEmulator = await start_emulator()
    agent = await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    await wait_for(lambda: _ready(agent))
    await coordinator.stop()
    # WHEN a tech on the Pi asks for a test print
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"http://127.0.0.1:{agent.status_port}/test-print") as response,
    ):
        answer = await response.json()
        assert response.status == 200, answer
    # THEN the test badge comes out of the printer, with no job behind it
    assert answer["printed"] is True and answer["ready"] is True
    await emulator.wait_until(lambda e: len(e.printed) == 1, timeout=10)
    badge = emulator.printed[0]
    assert badge.job_id is None and "test print printer-a" in badge.text
    assert await agent.journal.counts() == {state: 0 for state in await agent.journal.counts()}


async def test_a_test_print_is_refused_from_a_non_loopback_address(
    coordinator: LiveCoordinator, start_emulator: Any, run_agent: Any, tmp_path: Path
) -> None:
    addresses = [address for address in local_ipv4_addresses(None) if address != "127.0.0.1"]
    if not addresses:
        pytest.skip("this machine has no non-loopback IPv4 address (see test_is_loopback)")
    # GIVEN an agent whose status endpoint listens on every interface
    emulator: PrinterEmulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a",
                              status_host="0.0.0.0")  # fmt: skip
    agent = await run_agent(settings)
    await wait_for(lambda: _ready(agent))
    base = f"http://{addresses[0]}:{agent.status_port}"
    async with aiohttp.ClientSession() as session:
        # WHEN someone calls it through the machine's network address
        async with session.get(base + "/status") as response:
            assert response.status == 200  # reading the status is fine
        async with session.post(base + "/test-print") as response:
            answer = await response.json()
            # THEN the test print is refused, and nothing is printed
            assert response.status == 403
            assert answer == {
                "printed": False,
                "error": "test prints are only taken from this machine (loopback)",
            }
    assert emulator.printed == []


@pytest.mark.parametrize(
    ("remote", "local"),
    [
        ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("::ffff:127.0.0.1", True),
        ("192.0.2.2", False), ("10.0.0.21", False), ("::ffff:10.0.0.21", False),
        ("fe80::1%eth0", False), ("", False), (None, False), ("not-an-address", False),
    ],
)  # fmt: skip
def test_is_loopback(remote: str | None, local: bool) -> None:
    assert is_loopback(remote) is local


async def test_a_test_print_waits_for_the_badge_being_printed(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent in the middle of a badge: bytes sent, its confirmation probe waiting
    emulator: PrinterEmulator = await start_emulator()
    relay = ReplyHoldingRelay("127.0.0.1", emulator.port)
    await relay.start()
    settings = agent_settings(
        "printer-a", coordinator, emulator, tmp_path / "a", probe_interval_s=60,
        printer={"kind": "emulator", "host": "127.0.0.1", "port": relay.port, "timeout_s": 10},
    )  # fmt: skip
    try:
        agent = await run_agent(settings)
        await wait_for(lambda: _ready(agent))
        relay.hold_replies()
        job_id = await kiosk.submit(badge_ref, "printer-a")
        await emulator.wait_until(lambda e: len(e.printed) == 1, timeout=20)
        async with aiohttp.ClientSession() as session:
            # WHEN a test print is asked for meanwhile
            test_print = asyncio.create_task(
                session.post(f"http://127.0.0.1:{agent.status_port}/test-print")
            )
            # THEN it queues for the printer lock the print loop holds, and prints nothing
            await wait_for(lambda: _waiting_for_the_printer(agent))
            assert emulator.printed[0].job_id == job_id and len(emulator.printed) == 1
            assert not test_print.done()
            # WHEN the printer confirms the badge
            relay.release_replies()
            async with await test_print as response:
                assert response.status == 200
            # (its bytes may still be on their way through the relay)
            await emulator.wait_until(lambda e: len(e.printed) == 2, timeout=10)
    finally:
        await relay.stop()
    # THEN the badge was confirmed on its own (printed, not uncertain), then the test print
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [job_id, None]
    assert "test print printer-a" in emulator.printed[1].text


@pytest.mark.parametrize(("asked_s", "followed_s"), [(0.5, 0.5), (0.01, 0.1)])
async def test_the_agent_heartbeats_at_the_interval_the_coordinator_asks_clamped(
    settings: CoordinatorSettings, redis: Redis, start_emulator: Any, run_agent: Any,
    tmp_path: Path, caplog: pytest.LogCaptureFixture, asked_s: float, followed_s: float,
) -> None:  # fmt: skip
    # GIVEN a coordinator that asks for heartbeats every `asked_s`
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER)
    coordinator = LiveCoordinator(settings.model_copy(update={"heartbeat_interval_s": asked_s}),
                                  redis)  # fmt: skip
    await coordinator.start()
    try:
        emulator: PrinterEmulator = await start_emulator()
        # WHEN an agent configured for 0.2 s talks to it
        await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a",
                                       heartbeat_interval_s=0.2))  # fmt: skip

        # THEN it switches to the coordinator's interval, within the sane range
        async def switched() -> Any:
            return next((record for record in caplog.records
                         if _event(record) == "heartbeat_interval_changed"), None)  # fmt: skip

        record = await wait_for(switched)
        assert record.fields["interval_s"] == followed_s and record.fields["was_s"] == 0.2
    finally:
        await coordinator.stop()


def test_heartbeat_interval_clamping() -> None:
    assert clamp_heartbeat_interval(1.0) == 1.0
    assert clamp_heartbeat_interval(0.001) == 0.1
    assert clamp_heartbeat_interval(3600) == 60.0
    assert clamp_heartbeat_interval(0) is None
    assert clamp_heartbeat_interval(-1) is None
    assert clamp_heartbeat_interval(float("nan")) is None


def _event(record: logging.LogRecord) -> Any:
    fields = getattr(record, "fields", None)
    return fields.get("event") if isinstance(fields, dict) else None


async def _ready(agent: Any) -> bool:
    return bool(agent.watch.ready)


async def _reachable(agent: Any, reachable: bool) -> bool:
    return bool(agent.client.reachable is reachable)


async def _waiting_for_the_printer(agent: Any) -> bool:
    # asyncio.Lock keeps its queue in `_waiters` (CPython 3.11-3.13): one waiter is the test print.
    return bool(agent.printer_lock.locked() and len(agent.printer_lock._waiters or ()) == 1)


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state


async def _paper_is(agent: Any, level: str) -> bool:
    return bool(agent.watch.latest.paper == level)


async def test_healthz_tells_a_wedged_loop_from_a_running_one(
    coordinator: LiveCoordinator, start_emulator: Any, run_agent: Any, tmp_path: Path
) -> None:
    # GIVEN a running agent, healthy (short printer timeouts: its probe's backstop is 3.6 s)
    emulator: PrinterEmulator = await start_emulator()
    printer = {"kind": "emulator", "host": "127.0.0.1", "port": emulator.port, "timeout_s": 0.2}
    agent = await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a",
                                           printer=printer))  # fmt: skip
    await wait_for(lambda: _ready(agent))
    url = f"http://127.0.0.1:{agent.status_port}/healthz"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200
    # WHEN every worker thread hangs (reads that never return): its probe tasks run on,
    # each ending at its backstop, but no probe ever comes back
    release = threading.Event()
    loop = asyncio.get_running_loop()
    hung = [loop.run_in_executor(None, release.wait) for _ in range(64)]
    try:
        # THEN /healthz answers 503 and names the stuck loop, though every task runs
        async def unhealthy() -> Any:
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                return await response.json() if response.status == 503 else None

        body = await wait_for(unhealthy, timeout_s=30)
        assert body["loops_not_running"] == [] and "probe" in body["stuck"], body
        assert not agent.loops_not_running()
    finally:
        release.set()
        await asyncio.gather(*hung)

    # AND once its threads come back, it is healthy again
    async def healthy() -> bool:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return response.status == 200

    await wait_for(healthy, timeout_s=15)
