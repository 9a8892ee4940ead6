"""One base error for discovery, with one-line subclasses (as python-zeroconf does)."""

from __future__ import annotations


class DiscoveryError(Exception):
    """Base class for every mDNS discovery failure."""


class CoordinatorNotFound(DiscoveryError):
    """No coordinator answered on mDNS within the timeout."""


class NameConflict(DiscoveryError):
    """Another host already advertises this name (two Pis with one printer id?)."""
