"""The agent's loops, one module per task: lease, renew, print, ack, probe, heartbeat,
housekeeping. `service.Agent` starts and supervises them."""
