"""The Redis topology settings are checked when they are read (docs/config.md)."""

from __future__ import annotations

from typing import Any

import pytest

from badgeline.coordinator.config import ConfigError, load_coordinator_settings


@pytest.mark.parametrize(
    ("settings", "complaint"),
    [
        ({"redis_mode": "cluster"}, "needs redis_url"),
        ({"redis_mode": "cluster", "redis_url": "redis://n1:6379/2"}, "only database 0"),
        ({"redis_mode": "cluster", "redis_url": "redis://n1", "redis_cluster_nodes": ["n2"]},
         "not host:port"),
        ({"redis_mode": "sentinel", "redis_sentinels": ["s1:26379"]}, "redis_sentinel_master"),
        ({"redis_mode": "sentinel", "redis_sentinels": ["s1:26379"], "redis_sentinel_master": "m",
          "redis_url": "redis://n1"}, "names the master as its host"),
        ({"redis_sentinels": ["s1:26379"], "redis_sentinel_master": "m"}, "only used with"),
        ({"redis_url": "redis://n1", "redis_cluster_nodes": ["n2:6379"]}, "only used with"),
    ],
)  # fmt: skip
def test_an_incomplete_redis_topology_stops_start_up(
    settings: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(ConfigError, match=complaint):
        load_coordinator_settings(None, **settings)


def test_a_cluster_and_a_sentinel_set_up_are_read() -> None:
    cluster = load_coordinator_settings(
        None, redis_mode="cluster", redis_url="redis://n1:7000",
        redis_cluster_nodes=["n2:7000", "n3:7000"],
    )  # fmt: skip
    assert cluster.redis_cluster_nodes == ["n2:7000", "n3:7000"]
    sentinel = load_coordinator_settings(
        None, redis_mode="sentinel", redis_sentinels=["s1:26379", "s2:26379"],
        redis_sentinel_master="badgeline",
    )  # fmt: skip
    assert sentinel.redis_sentinel_master == "badgeline"
