// The venue's lists and reports: dead letters, parked jobs, failovers, alerts,
// the exactly-once reconciliation and the statistics, as tables and small
// charts. Each is redrawn only when its data changed.
import { $, changed, clock, count, h, idText, put, table } from "./dom.js";
import { act } from "./api.js";
import { columns, meter, stackedBar } from "./charts.js";

function unavailable(box, section) {
  if (!section || !section.unavailable) return false;
  box.replaceChildren(h("p", { class: "empty" }, `Not available: ${section.unavailable}`));
  return true;
}

export function cancelButton(jobId, size = "small", after = null) {
  return h("button", { type: "button", class: `${size} danger cancel`, onclick: async () => {
    if (!window.confirm(`Cancel ${jobId}?`)) return;
    const result = await act(`Cancel ${jobId}`, "POST", `/v1/jobs/${jobId}/cancel`);
    if (result && after) after();
  } }, "Cancel");
}

export function renderDeadLetters(section, total) {
  $("dead-letter-count").textContent = String(total);
  if (!section || !changed("dead-letters", section)) return;
  const box = $("dead-letters");
  if (unavailable(box, section)) return;
  const rows = section.items.map((d) => h("tr", { dataset: { job: d.job_id } },
    h("td", {}, idText(d.job_id)), h("td", {}, idText(d.printer_id)),
    h("td", { class: "wrap" }, d.reason), h("td", {}, clock(d.dead_lettered_at)),
    h("td", { class: "row-actions" },
      h("button", { type: "button", class: "small",
                    onclick: () => act(`Redrive ${d.job_id}`, "POST", "/v1/dead-letters/redrive",
                                       { ids: [d.job_id] }) }, "Redrive"),
      cancelButton(d.job_id))));
  box.replaceChildren(table(["job", "printer", "reason", "at", ""], rows, "No dead letters."));
}

export function renderParked(parked) {
  $("parked-count").textContent = String(parked.count);
  if (!changed("parked", parked)) return;
  const rows = parked.jobs.map((j) => h("tr", { dataset: { job: j.job_id } },
    h("td", {}, idText(j.job_id)), h("td", {}, idText(j.attendee_id)),
    h("td", {}, idText(j.printer_id)), h("td", {}, clock(j.updated_at)),
    h("td", { class: "row-actions" }, cancelButton(j.job_id))));
  $("parked").replaceChildren(
    table(["job", "attendee", "was on", "since", ""], rows, "No parked jobs."));
}

// A decision's targets map each receiving printer to how many jobs it took.
function targets(value) {
  const pairs = Array.isArray(value) ? value.map((id) => [id, null]) : Object.entries(value || {});
  if (!pairs.length) return "—";
  return pairs.map(([id, n]) => h("span", { class: "target" }, idText(id), n === null ? "" : ` (${n})`));
}

export function renderFailovers(failovers) {
  if (!changed("failovers", failovers)) return;
  const rows = failovers.map((f) => h("tr", { dataset: { decision: f.decision_id } },
    h("td", {}, clock(f.at || f.decided_at || f.created_at)),
    h("td", {}, idText(f.dead_printer_id)), h("td", { class: "wrap" }, targets(f.targets)),
    h("td", { class: "num" }, (f.drained_job_ids || []).length),
    h("td", { class: "num" }, (f.parked_job_ids || []).length),
    h("td", { class: "num" }, (f.inflight_job_ids || []).length),
    h("td", { class: "wrap" }, f.reason || "")));
  $("failovers").replaceChildren(table(
    ["at", "printer", "to", "moved", "parked", "in flight", "reason"], rows, "No failovers."));
}

export function renderAlerts(section) {
  if (!section || !changed("alerts", section)) return;
  const list = Array.isArray(section.items) ? section.items : [];
  $("alerts-section").hidden = list.length === 0;
  $("alerts").replaceChildren(h("ul", { class: "alerts" }, list.map((a) => (
    typeof a === "object"
      ? h("li", { class: `severity-${a.severity || "warning"}` }, a.message || a.kind)
      : h("li", {}, String(a))))));
}

// ---- reconciliation: does every accepted badge have an ending?

// A few of a list's jobs, and how many more it has (`total`: all pages together).
function jobList(jobs, total) {
  const shown = jobs.slice(0, 3).map((j) => idText(j.job_id));
  return h("span", { class: "jobs" }, shown, total > 3 ? ` +${total - 3} more` : "");
}

function checkRow(key, label, n, jobs, tone) {
  return h("tr", { dataset: { check: key }, class: n ? tone : "" },
    h("td", { class: "wrap" }, label), h("td", { class: "num" }, count(n)),
    h("td", { class: "wrap" }, jobs && jobs.length ? jobList(jobs, n) : ""));
}

export function renderReconcile(section) {
  if (!section || !changed("reconcile", section)) return;
  const box = $("reconcile");
  if (unavailable(box, section)) return;
  const c = section.counts;
  // The first page of the findings, each naming its list; `findings` counts each list.
  const n = section.findings || {};
  const found = (name) => (section.items || []).filter((f) => f.finding === name);
  const twice = n.printed_more_than_once || 0;
  const good = c.unaccounted === 0 && twice === 0;
  const verdict = good ? `Every accepted badge is accounted for (${count(c.accepted)} accepted).`
    : [c.unaccounted && `${count(c.unaccounted)} accepted badge(s) unaccounted for`,
      twice && `${count(twice)} printed more than once`].filter(Boolean).join("; ")
      + ": see the runbook, “check for duplicates or gaps”.";
  const parts = [
    { label: "printed", value: c.printed, className: "ok" },
    { label: "open", value: c.open, className: "open" },
    { label: "canceled", value: c.canceled, className: "muted" },
    { label: "expired", value: c.expired || 0, className: "expired" },
    { label: "failed", value: c.failed, className: "bad" },
  ];
  const openStates = Object.entries(c.open_by_state || {})
    .map(([state, n]) => `${n} ${state.replaceAll("_", " ")}`).join(" · ");
  const minutes = Math.round(section.deadline_s / 60);
  put(box,
    h("p", { class: `verdict-line ${good ? "ok" : "bad"}` }, verdict),
    stackedBar(parts, Math.max(c.accepted, 1)),
    h("ul", { class: "legend" }, parts.map((p) => h("li", { class: p.className },
      h("span", { class: "swatch" }), `${p.label} ${count(p.value)}`))),
    section.truncated && h("p", { class: "warn-line" },
      "The census stopped at its limit: these counts are partial."),
    table(["check", "count", "jobs"], [
      checkRow("unaccounted", "Unaccounted for (must be 0)", c.unaccounted, null, "bad"),
      checkRow("printed_more_than_once", "Printed more than once", twice,
        found("printed_more_than_once"), "bad"),
      checkRow("possible_duplicates", "Possible duplicates (check the badge)",
        n.possible_duplicates || 0, found("possible_duplicates"), "warn"),
      checkRow("not_terminal", `Open for ${minutes} min or more`, n.not_terminal || 0,
        found("not_terminal"), "warn"),
      checkRow("shed", "Shed at the door (never accepted)", c.shed, null, ""),
    ], "", "checks"),
    openStates && h("p", { class: "muted-line" }, `Open now: ${openStates}`));
}

// ---- statistics: how much, where, when

function tile(label, value, note) {
  return h("div", { class: "tile" }, h("span", { class: "tile-value" }, value),
    h("span", { class: "tile-label" }, label), note && h("span", { class: "tile-note" }, note));
}

function hourly(byHour, at) {
  // The last twelve hours, the current one last, empty hours as zero.
  const printed = new Map((byHour && Array.isArray(byHour.items) ? byHour.items : [])
    .map((r) => [r.hour, r.printed]));
  const now = Math.floor(at / 3600) * 3600;
  return Array.from({ length: 12 }, (_, i) => {
    const start = new Date((now - (11 - i) * 3600) * 1000);
    const key = `${start.toISOString().slice(0, 13)}:00Z`;
    return { label: String(start.getHours()).padStart(2, "0"), value: printed.get(key) || 0 };
  });
}

export function renderStats(stats, byHour, rates, at) {
  const box = $("stats");
  if (!stats || !changed("stats", [stats, byHour, [...rates]])) return;
  if (unavailable(box, stats)) return;
  const t = stats.totals;
  const rows = new Map((stats.items || []).map((r) => [r.printer_id, r]));
  for (const id of rates.keys()) if (!rows.has(id)) rows.set(id, { printer_id: id, printed: 0, failed_attempts: 0 });
  const top = Math.max(1, ...[...rows.values()].map((r) => r.printed));
  const printerRows = [...rows.values()].sort((a, b) => b.printed - a.printed).map((r) => {
    const rate = rates.get(r.printer_id);
    return h("tr", { dataset: { printer: r.printer_id } },
      h("td", {}, idText(r.printer_id)),
      h("td", { class: "num bar-cell" }, meter(r.printed, top), count(r.printed)),
      h("td", { class: `num${r.failed_attempts ? " warn" : ""}` }, count(r.failed_attempts)),
      h("td", { class: "num" }, rate === null || rate === undefined ? "—" : rate));
  });
  const reasons = (stats.failure_reasons || []).slice(0, 6).map((r) => h("tr", {},
    h("td", { class: "wrap" }, r.reason), h("td", { class: "num" }, count(r.count))));
  const hours = hourly(byHour, at);
  put(box,
    h("div", { class: "tiles" },
      tile("printed", count(t.printed)), tile("accepted", count(t.accepted)),
      tile("reprints", count(t.reprints), `${(100 * stats.reprint_rate).toFixed(1)} %`),
      tile("shed", count(t.shed)), tile("canceled", count(t.canceled)),
      tile("expired", count(t.expired || 0)),
      tile("failed attempts", count(t.failed_attempts))),
    h("h3", { class: "minor" }, "Badges per hour"),
    columns(hours, { title: `badges printed per hour, last 12 hours: ${
      hours.map((x) => `${x.label}h ${x.value}`).join(", ")}` }),
    h("h3", { class: "minor" }, "By printer"),
    // Four short columns fit a phone: no stacking here.
    table(["printer", "printed", "failed", "per min"], printerRows, "No badge printed yet.",
      "compact"),
    reasons.length ? [h("h3", { class: "minor" }, "Why prints failed"),
      table(["reason", "attempts"], reasons, "")] : null);
}
