-- 0002: why a `failed` result failed, as a classified reason code
-- (badgeline.protocol.failures): the coordinator fails a job at once for a
-- permanent reason and retries it for a transient one. NULL for other results,
-- and for failures journaled before this column existed (retried, as then).
ALTER TABLE jobs ADD COLUMN reason TEXT;
ALTER TABLE ack_outbox ADD COLUMN reason TEXT;
