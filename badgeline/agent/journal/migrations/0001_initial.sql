-- 0001: one row per (job, lease) and the ack outbox.
--
-- A job is keyed by (job_id, lease_id), not job_id alone: the coordinator may
-- lease the same job again (after a failed print, or after failover), and the
-- row of the earlier lease is a physical fact (a badge printed, or maybe
-- printed) that reconciliation and the "never print twice here" check need.
CREATE TABLE jobs (
    entry_id     INTEGER PRIMARY KEY,
    job_id       TEXT    NOT NULL,
    lease_id     TEXT    NOT NULL,
    fence        INTEGER,
    payload      TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN (
                     'leased', 'granted', 'printed', 'failed', 'uncertain', 'acked', 'dropped')),
    -- The result reported to the coordinator; an acked row keeps it.
    outcome      TEXT    CHECK (outcome IN ('printed', 'failed', 'uncertain')),
    error        TEXT,
    leased_at    REAL    NOT NULL,
    granted_at   REAL,
    printed_at   REAL,
    acked_at     REAL,
    updated_at   REAL    NOT NULL,
    ack_attempts INTEGER NOT NULL DEFAULT 0,
    UNIQUE (job_id, lease_id)
);

-- Never two live leases of one job: a new lease drops an older ungranted one,
-- and is itself dropped while an older one is granted or printed.
CREATE UNIQUE INDEX jobs_one_live_lease ON jobs (job_id) WHERE state IN ('leased', 'granted');

CREATE INDEX jobs_by_state ON jobs (state, entry_id);

-- Results the coordinator has not confirmed yet, in the order they happened
-- (seq, not a timestamp: a Pi's clock can jump at boot when NTP syncs).
CREATE TABLE ack_outbox (
    seq       INTEGER PRIMARY KEY,
    job_id    TEXT    NOT NULL,
    lease_id  TEXT    NOT NULL,
    result    TEXT    NOT NULL CHECK (result IN ('printed', 'failed', 'uncertain')),
    fence     INTEGER,
    error     TEXT,
    queued_at REAL    NOT NULL,
    UNIQUE (job_id, lease_id)
);
