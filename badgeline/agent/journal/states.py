"""A job's local state machine on the agent, one row per (job, lease).

```
          grant               print ok
 leased ───────▶ granted ──────────────▶ printed ─────┐
  │  │              │    print failed                 │  the coordinator
  │  │              ├──────────────────▶ failed ──────┼── confirms the ──▶ acked
  │  └── bad PDF, no grant ────────────▶ failed       │  ack
  │                 └── outcome unknown ──▶ uncertain┘
  └── grant refused, superseded, or printed here before ──▶ dropped
```

`leased → failed` covers a badge that cannot be rendered before any grant
(bad PDF): the coordinator must hear about it to retry. `uncertain` is a
grant whose outcome is unknown: found at start-up without a result (the power
went during the print) or cut off mid-send. The badge may or may not exist,
and only the coordinator may decide to print it again.
"""

from __future__ import annotations

from enum import StrEnum

from badgeline.protocol.states import AckResult


class LocalJobState(StrEnum):
    LEASED = "leased"
    GRANTED = "granted"
    PRINTED = "printed"
    FAILED = "failed"
    UNCERTAIN = "uncertain"
    ACKED = "acked"
    DROPPED = "dropped"


ALLOWED_TRANSITIONS: dict[LocalJobState, frozenset[LocalJobState]] = {
    LocalJobState.LEASED: frozenset(
        {LocalJobState.GRANTED, LocalJobState.FAILED, LocalJobState.DROPPED}
    ),
    LocalJobState.GRANTED: frozenset(
        {LocalJobState.PRINTED, LocalJobState.FAILED, LocalJobState.UNCERTAIN}
    ),
    LocalJobState.PRINTED: frozenset({LocalJobState.ACKED}),
    LocalJobState.FAILED: frozenset({LocalJobState.ACKED}),
    LocalJobState.UNCERTAIN: frozenset({LocalJobState.ACKED}),
    LocalJobState.ACKED: frozenset(),
    LocalJobState.DROPPED: frozenset(),
}

# States whose result waits in the ack outbox until the coordinator confirms it.
RESULT_STATES = frozenset({LocalJobState.PRINTED, LocalJobState.FAILED, LocalJobState.UNCERTAIN})
FINISHED_STATES = frozenset({LocalJobState.ACKED, LocalJobState.DROPPED})

RESULT_OF_STATE: dict[LocalJobState, AckResult] = {
    LocalJobState.PRINTED: AckResult.PRINTED,
    LocalJobState.FAILED: AckResult.FAILED,
    LocalJobState.UNCERTAIN: AckResult.UNCERTAIN,
}


def already_there(current: LocalJobState, outcome: AckResult | None, target: LocalJobState) -> bool:
    """True when `target` was already reached, so repeating the transition is a no-op.

    An acked row still remembers its result (`outcome`): recording `printed`
    again after the ack has been confirmed is a repeat, not an error.
    """
    if current is target:
        return True
    return (
        current is LocalJobState.ACKED
        and outcome is not None
        and (RESULT_OF_STATE.get(target) is outcome)
    )


def may_transition(current: LocalJobState, target: LocalJobState) -> bool:
    return target in ALLOWED_TRANSITIONS[current]
