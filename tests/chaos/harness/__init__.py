"""Chaos harness: a venue of real processes under a seeded fault schedule, and a
checker that reconciles the printers' ground truth against what kiosks were told.

Test code, not product: it lives beside the tests that use it and stays out of
the wheel. bench/chaos.py and bench/bench_durability.py import it from a checkout.

- `proxy`: a TCP fault proxy in front of a coordinator or a printer (cut / heal,
  held replies), on the caller's event loop or on a thread of its own;
- `schedule`: the fault plan drawn from a recorded seed;
- `faults`: plays the plan on a venue and logs when each fault struck and cleared;
- `venue`: one shared Redis, coordinator replicas, emulators, agents behind proxies;
- `kiosk`: kiosks that submit with retries under one idempotency key per job;
- `checker`: lost, duplicated and unjustified jobs, as numbers;
- `run`: the whole run, used by tests/chaos and bench/chaos.py;
- `redis_kill`, `power_cuts`: kill -9 Redis under accept load, kill -9 the agent
  inside its journal writes (tests/chaos/test_durability.py, bench/bench_durability.py).

docs/reliability.md has the design, the figures and the seed of each run.
"""
