"""mDNS discovery: agents advertise themselves, the coordinator browses them,
and an agent without a configured URL finds (and follows) the coordinator.

Public facade: import from here, not from the modules behind it.
"""

from badgeline.discovery.advertise import AgentAdvertiser, CoordinatorAdvertiser, ServiceAdvertiser
from badgeline.discovery.agents import AgentBrowser, SeenAgent
from badgeline.discovery.coordinator import (
    CoordinatorFollower,
    CoordinatorLocation,
    find_coordinator,
)
from badgeline.discovery.errors import CoordinatorNotFound, DiscoveryError, NameConflict
from badgeline.discovery.names import (
    AGENT_SERVICE_TYPE,
    COORDINATOR_SERVICE_TYPE,
    DEFAULT_TIMING,
    DiscoveryTiming,
    open_zeroconf,
)

__all__ = [
    "AGENT_SERVICE_TYPE",
    "COORDINATOR_SERVICE_TYPE",
    "DEFAULT_TIMING",
    "AgentAdvertiser",
    "AgentBrowser",
    "CoordinatorAdvertiser",
    "CoordinatorFollower",
    "CoordinatorLocation",
    "CoordinatorNotFound",
    "DiscoveryError",
    "DiscoveryTiming",
    "NameConflict",
    "SeenAgent",
    "ServiceAdvertiser",
    "find_coordinator",
    "open_zeroconf",
]
