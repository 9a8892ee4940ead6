"""The loops and decisions that keep jobs moving: failover, health, leases, routing, wake-ups."""
