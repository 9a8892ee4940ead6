"""The dashboard's order of trouble and its trends: the conditions named and ranked
from the coordinator's verdicts (control/triage.py), rates and sparklines from
readings of the store (control/trend.py), and both in the snapshot, over real
HTTP and real Redis."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.fleet import UNTIL_RESUMED_S
from badgeline.coordinator.control.trend import FleetTrend, PrinterTrend, Reading, TrendShape
from badgeline.coordinator.control.triage import triage
from badgeline.coordinator.store import Store
from tests.conftest import OPERATOR_TOKEN, agent_token, auth
from tests.dashboard.conftest import Client
from tests.dashboard.test_stream import beat, submit
from tests.helpers import wait_for

NOW = 1_700_000_000.0
SHAPE = TrendShape(sample_every_s=5, step_s=30, steps=4, rate_window_s=60)


def row(printer_id: str, **fields: Any) -> dict[str, Any]:
    """A printer as GET /v1/printers gives it: healthy and idle unless told."""
    base = {
        "printer_id": printer_id,
        "state": "healthy",
        "queue_depth": 0,
        "in_flight": [],
        "paused": False,
        "paused_until": None,
        "last_heartbeat_age_s": 0.3,
        "health": {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"},
    }
    return base | fields


def no_trend(_: str) -> PrinterTrend:
    return PrinterTrend(None, [None] * 4, [None] * 4)


def order(printers: list[dict[str, Any]], decisions: list[dict[str, Any]] | None = None,
          trend_of: Any = no_trend) -> list[tuple[str, str, str]]:  # fmt: skip
    rows = triage(printers, decisions or [], high_water_mark=200, stale_after_s=3.0,
                  trend_of=trend_of)  # fmt: skip
    return [(r["printer_id"], r["condition"], r["label"]) for r in rows]


def test_printers_come_most_troubled_first_each_named() -> None:
    jam = {"reachable": True, "jammed": True, "cover_open": False, "paper": "ok"}
    out = {"reachable": True, "jammed": False, "cover_open": False, "paper": "out"}
    low = {"reachable": True, "jammed": False, "cover_open": False, "paper": "low"}
    until = NOW + UNTIL_RESUMED_S
    printers = [
        row("printer-h", queue_depth=2), row("printer-i", queue_depth=7),
        row("printer-f", queue_depth=60), row("printer-g", queue_depth=60, rejecting=True),
        row("printer-e", paused=True, paused_until=until, in_flight=["job_1"]),
        row("printer-d", paused=True, paused_until=NOW + 600, queue_depth=3),
        row("printer-x", state="degraded", health=low, paused=True, paused_until=NOW + 60),
        row("printer-c", state="dead", health=out), row("printer-b", state="dead", health=jam),
        row("printer-a", state="dead", last_heartbeat_age_s=12.0, health=jam),
        row("printer-z", state="unknown", last_heartbeat_age_s=None, health=None),
    ]  # fmt: skip
    # printer-e's pause is the one its drain set; printer-d was paused by hand.
    drain = {"decision_id": "drain-printer-e-1a2b", "dead_printer_id": "printer-e",
             "decided_at": NOW + 0.01}  # fmt: skip
    assert order(printers, [drain]) == [
        # a silent agent is dead whatever it last said; never heard from is dead too
        ("printer-a", "dead", "dead"), ("printer-z", "dead", "dead"),
        ("printer-b", "jammed", "jammed"), ("printer-c", "paper_out", "paper out"),
        ("printer-x", "degraded", "degraded"), ("printer-d", "paused", "paused"),
        ("printer-e", "draining", "draining"),
        # rejecting new jobs outranks a backlog: its queue only shrinks
        ("printer-g", "rejecting", "rejecting"), ("printer-f", "backlog", "backlog"),
        # healthy last, the busier first
        ("printer-i", "healthy", "healthy"), ("printer-h", "healthy", "healthy"),
    ]  # fmt: skip


def test_a_pause_after_a_drain_is_a_plain_pause() -> None:
    drain = {"decision_id": "drain-printer-e-1a2b", "dead_printer_id": "printer-e",
             "decided_at": NOW}  # fmt: skip
    # WHEN the drained printer is resumed and paused again, until resumed, an hour later
    again = row("printer-e", paused=True, paused_until=NOW + 3600 + UNTIL_RESUMED_S)
    assert order([again], [drain]) == [("printer-e", "paused", "paused")]
    # …and a failover after the drain is the printer's latest decision
    failover = {"decision_id": "fo-printer-e-2", "dead_printer_id": "printer-e",
                "decided_at": NOW + 5}  # fmt: skip
    drained = row("printer-e", paused=True, paused_until=NOW + UNTIL_RESUMED_S)
    assert order([drained], [failover, drain]) == [("printer-e", "paused", "paused")]
    assert order([drained], [drain]) == [("printer-e", "draining", "drained")]


def test_a_queue_is_a_backlog_by_its_depth_or_by_its_minutes_of_work() -> None:
    def at_rate(per_min: float) -> Any:
        return lambda _: PrinterTrend(per_min, [], [])

    # 40 waiting at 10 a minute is four minutes: not yet; at 5 a minute, eight: a backlog.
    assert order([row("printer-a", queue_depth=40)], trend_of=at_rate(10))[0][1] == "healthy"
    [slow] = triage([row("printer-a", queue_depth=40)], [], high_water_mark=200,
                    stale_after_s=3, trend_of=at_rate(5))  # fmt: skip
    assert (slow["condition"], slow["wait_min"]) == ("backlog", 8.0)
    assert slow["detail"] == "40 waiting, about 8 min of work"
    # A quarter of the high-water mark is a backlog whatever the rate.
    assert order([row("printer-a", queue_depth=50)], trend_of=at_rate(600))[0][1] == "backlog"


def reading(at_s: float, printed: int, depth: int) -> Reading:
    return Reading(int(at_s * 1000), {"printer-a": printed}, {"printer-a": depth})


def test_rates_and_sparklines_come_from_readings_of_the_counter() -> None:
    trend = FleetTrend(SHAPE)
    assert trend.of("printer-a").badges_per_min is None  # nothing read yet
    # GIVEN readings every 5 s for over three minutes: 2 badges each, 24 a minute
    for i in range(40):
        trend.add(reading(NOW + 5 * i, printed=2 * i, depth=20 - i // 2))
    a = trend.of("printer-a")
    assert a.badges_per_min == 24.0
    assert a.rates == [24.0, 24.0, 24.0, 24.0]
    assert a.depths == [10, 7, 4, 1]  # at 105, 135, 165 and 195 s
    # A printer never read has no rate of its own, and prints none.
    assert trend.of("printer-b").badges_per_min == 0.0
    # Old readings are dropped: five steps' worth and one reading are kept.
    assert len(trend._readings) == 32


def test_a_short_look_is_no_rate_and_a_counter_that_went_back_is_none() -> None:
    trend = FleetTrend(SHAPE)
    trend.add(reading(NOW, 10, 0))
    trend.add(reading(NOW + 5, 12, 0))
    assert trend.of("printer-a").badges_per_min is None  # 5 s of a 60 s window
    trend.add(reading(NOW + 20, 3, 0))  # another Redis, same clock: the counter went back
    assert trend.of("printer-a").badges_per_min is None


async def print_one(client: Client, printer_id: str) -> None:
    headers = auth(agent_token(printer_id))
    base = f"/v1/agents/{printer_id}"
    [leased] = (await (await client.post(f"{base}/lease?max=1", headers=headers)).json())["jobs"]
    job = f"{base}/jobs/{leased['job_id']}"
    started = await client.post(f"{job}/start", headers=headers,
                                json={"lease_id": leased["lease_id"]})  # fmt: skip
    fence = (await started.json())["fence"]
    acked = await client.post(f"{job}/ack", headers=headers, json={
        "lease_id": leased["lease_id"], "result": "printed", "fence": fence})  # fmt: skip
    assert acked.status == 200


async def test_the_trend_reads_printed_counts_and_depths_from_the_store(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    store = Store(redis, settings)
    trend = FleetTrend(TrendShape(sample_every_s=0.1, step_s=0.5, steps=5, rate_window_s=5))
    await beat(client, "printer-a")
    await trend.sample(store)
    # WHEN printer-a prints two badges and has one more waiting
    for _ in range(3):
        assert (await submit(client, "printer-a")).status == 201
    await print_one(client, "printer-a")
    await print_one(client, "printer-a")
    assert await store.reports.printed_by_printer() == {"printer-a": 2}

    async def measured() -> PrinterTrend | None:
        await trend.sample(store)
        seen = trend.of("printer-a")
        return seen if seen.badges_per_min is not None else None

    # THEN, read again a little later, the last reading has the depth and the rate is
    # the two badges over the time between readings
    seen = await wait_for(measured, timeout_s=5)
    assert seen.depths[-1] == 1
    assert seen.badges_per_min is not None and seen.badges_per_min > 0


async def test_the_snapshot_carries_the_printers_in_order_of_trouble(
    client: Client, csrf: str
) -> None:
    await beat(client, "printer-a")
    await beat(client, "printer-b", jammed=True)
    await beat(client, "printer-c")
    paused = await client.post("/v1/printers/printer-c/pause", json={"for_s": 60},
                               headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert paused.status == 200

    async def triaged() -> Any:
        snapshot = await (await client.get("/dashboard/snapshot")).json()
        rows = [(t["printer_id"], t["condition"]) for t in snapshot["triage"]]
        return snapshot if rows[0] == ("printer-b", "jammed") else None

    snapshot = await wait_for(triaged, timeout_s=5)
    assert [(t["printer_id"], t["condition"]) for t in snapshot["triage"]] == [
        ("printer-b", "jammed"),
        ("printer-c", "paused"),
        ("printer-a", "healthy"),
    ]
    assert snapshot["trend_step_s"] == 30.0
    assert set(snapshot["triage"][0]["trend"]) == {"badges_per_min", "rates", "depths"}
    # The statistics by hour ride along with the other slow sections.
    assert snapshot["stats_by_hour"]["by"] == "hour"
    bearer = await client.get("/dashboard/snapshot", headers=auth(OPERATOR_TOKEN))
    assert bearer.status == 200
