"""`badgeline provision`: prepare a Raspberry Pi OS image so the Pi installs an agent itself."""

from badgeline.provision.agent_config import AgentConfig, parse_printer, render_agent_toml
from badgeline.provision.boot import BootSystem, ProvisionError, Wifi, detect_boot_system
from badgeline.provision.image import BootPartition, ImageError, find_boot_partition
from badgeline.provision.provision import ProvisionRequest, ProvisionResult, provision

__all__ = [
    "AgentConfig",
    "BootPartition",
    "BootSystem",
    "ImageError",
    "ProvisionError",
    "ProvisionRequest",
    "ProvisionResult",
    "Wifi",
    "detect_boot_system",
    "find_boot_partition",
    "parse_printer",
    "provision",
    "render_agent_toml",
]
