"""The agent's durable memory: leases, grants, print results and the ack outbox in SQLite.

Invariant 5: bytes go to the printer only after `record_grant` has returned
(the grant is fsynced). Invariant 6: `record_printed` is fsynced before the ack
is sent, and `pending_acks` survives restarts until `mark_acked`.

Rows are keyed by (job_id, lease_id), not job_id: the coordinator may lease a
job again (after a failed print, or after failover), and the earlier lease's
row records a physical fact. A new lease supersedes an older lease that was
never granted; it is journaled as `dropped` (not printed) while an earlier
lease of the same job is granted, printed, or uncertain and not yet reported.
Pruning removes old acked and dropped rows, and with them that local guard;
the coordinator's `already_printed` refusal is the main one.
"""

from badgeline.agent.journal.errors import (
    IllegalTransitionError,
    JournalBusyError,
    JournalCorruptError,
    JournalError,
    JournalInUseError,
    JournalSchemaError,
    JournalWriteError,
    UnknownLeaseError,
)
from badgeline.agent.journal.journal import Journal
from badgeline.agent.journal.models import JournalEntry, PendingAck, RecoveryPlan
from badgeline.agent.journal.settings import JournalSettings
from badgeline.agent.journal.states import LocalJobState

__all__ = [
    "IllegalTransitionError",
    "Journal",
    "JournalBusyError",
    "JournalCorruptError",
    "JournalEntry",
    "JournalError",
    "JournalInUseError",
    "JournalSchemaError",
    "JournalSettings",
    "JournalWriteError",
    "LocalJobState",
    "PendingAck",
    "RecoveryPlan",
    "UnknownLeaseError",
]
