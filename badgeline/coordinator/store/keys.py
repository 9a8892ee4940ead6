"""Every Redis key the coordinator uses, built in one place.

All keys of one venue share the hash tag `{venue}` so that every Lua script
touches a single Redis Cluster slot and runs unchanged on a cluster. Scripts
that must reach a key they were not handed (a job hash found in a queue)
rebuild it from `prefix` with the same layout as below: keep the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VenueKeys:
    venue: str

    @property
    def prefix(self) -> str:
        return f"bl:{{{self.venue}}}:"

    @property
    def data_format(self) -> str:
        """The format the venue's keys are written in (store/upgrade.py): an integer;
        absent before the first coordinator that keeps it ran (format 1)."""
        return self.prefix + "data_format"

    # ---- counters and indexes
    @property
    def sequence(self) -> str:
        """Acceptance counter: FIFO within a priority, never wall-clock fractions."""
        return self.prefix + "seq"

    @property
    def printers(self) -> str:
        """Set of printer ids that have ever heartbeated or been targeted."""
        return self.prefix + "printers"

    @property
    def leases(self) -> str:
        """Sorted set job_id -> lease expiry (ms, Redis clock) of leased, ungranted jobs."""
        return self.prefix + "leases"

    @property
    def dead_letters(self) -> str:
        """Sorted set job_id -> time dead-lettered (ms) (retire-4.lua: prefix .. 'dlq')."""
        return self.prefix + "dlq"

    @property
    def printed_twice(self) -> str:
        """Set of job ids with more than one physical print reported."""
        return self.prefix + "printed_twice"

    @property
    def parked(self) -> str:
        """Sorted set job_id -> score: the venue holding queue, for jobs with no
        healthy printer to go to. Scripts also build this as prefix .. 'parked'."""
        return self.prefix + "parked"

    @property
    def retry(self) -> str:
        """Sorted set job_id -> due time (ms) of failed jobs backing off (prefix .. 'retry')."""
        return self.prefix + "retry"

    @property
    def inflight_checks(self) -> str:
        """Sorted set job_id -> when the acknowledgement check of a job that was
        printing on a failed printer is due (prefix .. 'inflight_checks')."""
        return self.prefix + "inflight_checks"

    @property
    def heartbeat_watch(self) -> str:
        """Hash: when a monitor last checked heartbeats and when watching resumed after a
        gap with no coordinator up (scripts: prefix .. 'heartbeat_watch')."""
        return self.prefix + "heartbeat_watch"

    @property
    def closed(self) -> str:
        """Sorted set job_id -> when the job last entered a closed state (printed,
        canceled, failed, dead-lettered, expired; ms, Redis clock): the retention sweep's
        index (control/retention.py). transition() in includes/common.lua keeps it
        as prefix .. 'closed'."""
        return self.prefix + "closed"

    @property
    def expiring(self) -> str:
        """Sorted set job_id -> deadline (ms, Redis clock) of the jobs submitted with
        `expire_after_s` while they wait for a print to start (queued, leased,
        retrying, parked). transition() in includes/common.lua keeps it as
        prefix .. 'expiring'; expire_jobs-1.lua expires the due ones."""
        return self.prefix + "expiring"

    @property
    def events(self) -> str:
        """Stream of job events: one entry per state change, appended by transition()
        in includes/common.lua (as prefix .. 'events') in the script that makes the
        change. Fields: job_id, state, previous_state, at_ms, printer_id, attempts,
        fence, possible_duplicate, created_ms, reason, failure_reason, kiosk,
        kiosk_group, idempotency_key, expires_ms. Trimmed by age (event_retention_s,
        store/events.py); each webhook target reads it through its own consumer
        group, `webhook:<name>`."""
        return self.prefix + "events"

    @property
    def failovers(self) -> str:
        """List of failover decision ids, newest first."""
        return self.prefix + "failovers"

    def failover(self, decision_id: str) -> str:
        return f"{self.prefix}failover:{decision_id}"

    @property
    def wake_channel(self) -> str:
        """Pub/sub channel: a printer id is published when its queue gains work."""
        return self.prefix + "wake"

    # ---- per job
    def job(self, job_id: str) -> str:
        """Hash: one job. `payload` is the job as accepted (PrintJob as JSON); the rest
        is its life: state, printer_id, lease, fence, attempts, timestamps, owner.
        While the retention sweep exports a closed job it also holds `retire_claim`
        (the sweep's token), `retire_until_ms`, `retire_first_ms` and
        `retire_attempts` (retire_claim-1.lua); the job's keys (this hash, its
        history, prints, grants and reprint counter) leave Redis together (retire-4.lua)."""
        return f"{self.prefix}job:{job_id}"

    @property
    def job_pattern(self) -> str:
        """SCAN pattern of the job hashes (and their history and prints keys)."""
        return f"{self.prefix}job:*"

    def history(self, job_id: str) -> str:
        return f"{self.prefix}job:{job_id}:history"

    def prints(self, job_id: str) -> str:
        """Set of lease ids whose agent reported a physical print of this job."""
        return f"{self.prefix}job:{job_id}:prints"

    def session(self, session_sha256: str) -> str:
        """A dashboard sign-in, keyed by the SHA-256 of its cookie, never the cookie."""
        return f"{self.prefix}session:{session_sha256}"

    def artifact(self, sha256: str) -> str:
        """A badge PDF uploaded by a kiosk, content-addressed."""
        return f"{self.prefix}artifact:{sha256}"

    def grants(self, job_id: str) -> str:
        """Lease ids ever granted a start of this job (scripts: job key .. ':grants')."""
        return f"{self.prefix}job:{job_id}:grants"

    def idempotency(self, idempotency_key: str) -> str:
        """String `<job_id>|<payload hash>`, expiring `dedupe_window_s` after the job
        closes. When the job leaves Redis first (retention shorter than the window)
        the claim becomes `<job_id>|<payload hash>|<JSON>`, the JSON keeping what a
        duplicate's answer needs: state, printer_id, kiosk, kiosk_group, source."""
        return f"{self.prefix}idem:{idempotency_key}"

    def attendee(self, attendee_id: str) -> str:
        """Set of the attendee's job ids (a retired job leaves it; scripts build it as
        prefix .. 'attendee:' .. attendee_id)."""
        return f"{self.prefix}attendee:{attendee_id}"

    # ---- per printer
    def queue(self, printer_id: str) -> str:
        return f"{self.prefix}queue:{printer_id}"

    def printer(self, printer_id: str) -> str:
        return f"{self.prefix}printer:{printer_id}"

    def printing(self, printer_id: str) -> str:
        """Set of job ids granted to this printer and not yet acked."""
        return f"{self.prefix}printing:{printer_id}"

    def leased(self, printer_id: str) -> str:
        """Set of job ids leased to this printer's agent and not yet started (routing load).

        Kept by includes/common.lua's transition(), under this same name.
        """
        return f"{self.prefix}leased:{printer_id}"

    # ---- operator reports (includes/tally.lua builds these same names; census-9.lua)
    @property
    def stats_totals(self) -> str:
        """Hash of venue-wide counts: accepted, shed, printed, canceled, reprints, …,
        and what the retention sweep removed (retire-4.lua): retired, retired_failed
        (accepted jobs that left failed or dead-lettered), retired_printed_twice,
        retired_possible_duplicates."""
        return self.prefix + "stats:totals"

    @property
    def stats_by_printer(self) -> str:
        """Hash `printed|<printer_id>` / `failed|<printer_id>` -> count."""
        return self.prefix + "stats:by_printer"

    @property
    def stats_printer_events(self) -> str:
        """Hash `<event>|<printer_id>` -> count, for /metrics: `uncertain` (attempts whose
        outcome is unknown), `possible_duplicate` (jobs sent again for one), `shed`,
        `duplicate_print` (a print reported for a job already printed), `failover`.
        Only ever incremented (includes/tally.lua, count_printer_event)."""
        return self.prefix + "stats:printer_events"

    @property
    def stats_by_hour(self) -> str:
        """Hash hour start (Unix seconds, Redis clock) -> badges printed in that hour."""
        return self.prefix + "stats:by_hour"

    @property
    def stats_by_source(self) -> str:
        """Hash submitting actor (`kiosk:<name>`) -> badges printed."""
        return self.prefix + "stats:by_source"

    @property
    def failure_reasons(self) -> str:
        """Hash failed-print error text -> failed attempts (bounded; the rest is 'other')."""
        return self.prefix + "stats:failure_reasons"

    @property
    def possible_duplicates(self) -> str:
        """Set of job ids flagged possible_duplicate, as seen by the tally."""
        return self.prefix + "possible_duplicates"

    @property
    def held(self) -> str:
        """Sorted set job_id -> when seen held: jobs waiting for an operator."""
        return self.prefix + "held"

    @property
    def alert_events(self) -> str:
        """List of alert events (JSON), newest first, trimmed."""
        return self.prefix + "alert_events"

    def paper_level(self, printer_id: str) -> str:
        """The paper level last reported for a printer: alerts fire on a change."""
        return f"{self.prefix}printer:{printer_id}:paper"

    def reprint_sequence(self, job_id: str) -> str:
        """Counter numbering the reprints of a job (its reprints' idempotency keys)."""
        return f"{self.prefix}job:{job_id}:reprint_seq"

    def reprint_request(self, job_id: str, request_id: str) -> str:
        """The reprint number a client's `request_id` was given (a retry reuses it)."""
        return f"{self.prefix}job:{job_id}:reprint_req:{request_id}"

    # ---- callers: rate limits and enrolment (api/ratelimit.py, api/enrolment.py)
    def rate_bucket(self, kiosk_name: str) -> str:
        """Hash {tokens, at_ms}: a kiosk token's request bucket (rate_limit-2.lua)."""
        return f"{self.prefix}ratelimit:{kiosk_name}:bucket"

    def rate_quota(self, kiosk_name: str) -> str:
        """Hash {day, used}: jobs a kiosk token had accepted on that UTC day (Redis clock)."""
        return f"{self.prefix}ratelimit:{kiosk_name}:quota"

    def attempt_bucket(self, route: str, client: str) -> str:
        """Hash {tokens, at_ms}: a client address's attempts at a secret on one route
        (`enrol`, `login`; api/attempts.py, rate_limit-2.lua)."""
        return f"{self.prefix}attempts:{route}:{client}"

    def enrolment_code(self, code_sha256: str) -> str:
        """A single-use enrolment code, keyed by its SHA-256, never the code."""
        return f"{self.prefix}enrolment_code:{code_sha256}"

    def agent_token(self, token_sha256: str) -> str:
        """An agent token issued by enrolment, keyed by its SHA-256 (enrol-3.lua
        builds it as prefix .. 'agent_token:' .. sha256 to revoke a replaced one)."""
        return f"{self.prefix}agent_token:{token_sha256}"

    def enrolled_agent(self, printer_id: str, agent_id: str) -> str:
        """The SHA-256 of the token last issued to this agent of this printer."""
        return f"{self.prefix}enrolled:{printer_id}:{agent_id}"
