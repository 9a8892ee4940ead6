// badgeline operator dashboard: one SSE stream for the picture, the ordinary
// JSON API for every action. No framework and no build step; every value from
// the server goes into the page through textContent, never as HTML.
"use strict";

const session = { csrf: "", header: "X-CSRF-Token" };
const lastRendered = new Map(); // section -> JSON it was last drawn from
const printerCards = new Map(); // printer id -> {root, parts}
let snapshotAt = 0;

// ---- small helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const $ = (id) => document.getElementById(id);

function age(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  if (seconds < 10) return `${seconds.toFixed(1)} s ago`;
  if (seconds < 120) return `${Math.round(seconds)} s ago`;
  return `${Math.round(seconds / 60)} min ago`;
}

function clock(unixSeconds) {
  if (!unixSeconds) return "";
  return new Date(unixSeconds * 1000).toLocaleTimeString([], { hour12: false });
}

function toast(message, kind) {
  const el = $("toast");
  el.textContent = message;
  el.className = `toast show ${kind || "ok"}`;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.className = "toast"; }, 6000);
}

function changed(section, data) {
  const text = JSON.stringify(data);
  if (lastRendered.get(section) === text) return false;
  lastRendered.set(section, text);
  return true;
}

// ---- the JSON API, as the signed-in operator

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  // Cookie-authenticated writes must carry the session's CSRF token.
  if (method !== "GET") headers[session.header] = session.csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await response.json(); } catch (_) { /* an empty or non-JSON body */ }
  if (response.status === 401) { window.location.reload(); }
  if (!response.ok) {
    const message = (data && data.error && data.error.message) || response.statusText;
    throw new ApiError(response.status, message);
  }
  return data;
}

// Run an operator action, report it, then redraw at once instead of at the next push.
async function act(label, method, path, body) {
  try {
    const result = await api(method, path, body);
    toast(`${label}: done`, "ok");
    refresh();
    return result;
  } catch (error) {
    const hint = error.status === 404 && path.endsWith("/reprint")
      ? " (this coordinator has no reprint endpoint yet)" : "";
    toast(`${label} failed: ${error.message}${hint}`, "bad");
    return null;
  }
}

async function refresh() {
  try { render(await api("GET", "/dashboard/snapshot")); } catch (_) { /* the stream catches up */ }
}

// ---- printers: one card per printer, updated in place so inputs keep their text

function printerCard(id) {
  const parts = {
    verdict: h("span", { class: "verdict" }),
    paused: h("span", { class: "tag paused-tag", hidden: true }, "paused"),
    fill: h("div", { class: "fill" }),
    depth: h("span", { class: "depth" }),
    inflight: h("dd", { class: "inflight" }),
    heartbeat: h("dd", { class: "heartbeat" }),
    paper: h("dd", { class: "paper" }),
    problems: h("dd", { class: "problems" }),
    agent: h("dd", { class: "agent" }),
    confirmation: h("dd", { class: "confirmation" }),
    ttl: h("input", { class: "ttl", type: "number", min: "1", step: "1", placeholder: "TTL s",
                      "aria-label": `pause ${id} for seconds` }),
  };
  const root = h("article", { class: "printer", dataset: { printer: id } },
    h("header", {}, h("h3", {}, id), parts.verdict, parts.paused),
    h("div", { class: "queue" }, h("div", { class: "bar" }, parts.fill), parts.depth),
    h("dl", {},
      h("dt", {}, "In flight"), parts.inflight,
      h("dt", {}, "Heartbeat"), parts.heartbeat,
      h("dt", {}, "Paper"), parts.paper,
      h("dt", {}, "Problems"), parts.problems,
      h("dt", {}, "Printed means"), parts.confirmation,
      h("dt", {}, "Agent"), parts.agent),
    h("div", { class: "actions" },
      parts.ttl,
      h("button", { type: "button", class: "pause", onclick: () => pausePrinter(id, parts.ttl) },
        "Pause"),
      h("button", { type: "button", class: "resume",
                    onclick: () => act(`Resume ${id}`, "POST", `/v1/printers/${id}/resume`) },
        "Resume"),
      h("button", { type: "button", class: "drain danger", onclick: () => drainPrinter(id) },
        "Drain")));
  return { root, parts };
}

function pausePrinter(id, input) {
  const seconds = Number(input.value);
  const body = input.value && seconds > 0 ? { for_s: seconds } : {};
  const label = body.for_s ? `Pause ${id} for ${seconds} s` : `Pause ${id} until resumed`;
  act(label, "POST", `/v1/printers/${id}/pause`, body);
}

async function drainPrinter(id) {
  if (!window.confirm(`Drain ${id}? It is paused and its waiting jobs move to other printers.`)) {
    return;
  }
  const decision = await act(`Drain ${id}`, "POST", `/v1/printers/${id}/drain`, {});
  if (decision && decision.drained_job_ids) {
    toast(`Drained ${id}: ${decision.drained_job_ids.length} moved, `
      + `${(decision.parked_job_ids || []).length} parked`, "ok");
  }
}

// Details an agent reports that are news, not trouble: a printer busy with a badge,
// a write-only printer whose link is up.
const INFORMATIONAL_DETAILS = ["busy printing", "write-only printer"];

function healthProblems(health) {
  if (!health) return ["no report"];
  const problems = [];
  if (!health.reachable) problems.push("unreachable");
  if (health.jammed) problems.push("jammed");
  if (health.cover_open) problems.push("cover open");
  const news = INFORMATIONAL_DETAILS.some((prefix) => (health.detail || "").startsWith(prefix));
  if (health.detail && !news) problems.push(health.detail);
  return problems;
}

// How much `printed` promises on this printer: the printer's word, or less.
const CONFIRMATION_LABELS = {
  process_id: "out, by the printer's word",
  host_status: "out, by the Zebra's host status",
  print_completed: "out, by the Brother's print completed",
  status: "sent, printer healthy after",
  sent: "sent only (write-only printer)",
};

function updatePrinter(card, p, scale, highWater) {
  const { root, parts } = card;
  root.className = `printer state-${p.state}${p.paused ? " is-paused" : ""}`;
  parts.verdict.textContent = p.state;
  parts.paused.hidden = !p.paused;
  parts.paused.textContent = p.paused_until && p.paused_until - snapshotAt < 300 * 24 * 3600
    ? `paused until ${clock(p.paused_until)}` : "paused";
  parts.fill.style.width = `${Math.min(100, (100 * p.queue_depth) / scale)}%`;
  parts.fill.classList.toggle("near-full", p.queue_depth >= 0.8 * highWater);
  parts.depth.textContent = `${p.queue_depth} queued`;
  parts.depth.title = `high-water mark ${highWater}`;
  parts.inflight.textContent = p.in_flight.length ? p.in_flight.join(", ") : "—";
  parts.heartbeat.textContent = age(p.last_heartbeat_age_s);
  parts.heartbeat.classList.toggle("stale", (p.last_heartbeat_age_s ?? 1e9) > 5);
  const paper = (p.health && p.health.paper) || "unknown";
  parts.paper.textContent = paper;
  parts.paper.className = `paper paper-${paper}`;
  const problems = healthProblems(p.health);
  parts.problems.textContent = problems.length ? problems.join(", ") : "none";
  parts.problems.classList.toggle("bad", problems.length > 0);
  parts.agent.textContent = [p.agent_id, p.version, p.language, (p.labels || []).join(" ")]
    .filter(Boolean).join(" · ") || "—";
  parts.confirmation.textContent = CONFIRMATION_LABELS[p.confirmation] || "not known yet";
  parts.confirmation.title = p.confirmation_guarantee || "";
  parts.confirmation.classList.toggle("weak", p.confirmation === "sent"
    || p.confirmation === "status");
}

function renderPrinters(printers, highWater) {
  const box = $("printers");
  if (!printers.length) return;
  box.querySelector(".empty")?.remove();
  // Bars share one scale so that skew between printers is visible at a glance.
  const scale = Math.max(10, ...printers.map((p) => p.queue_depth));
  const seen = new Set();
  for (const p of printers) {
    seen.add(p.printer_id);
    if (!printerCards.has(p.printer_id)) {
      const card = printerCard(p.printer_id);
      printerCards.set(p.printer_id, card);
      box.append(card.root);
    }
    updatePrinter(printerCards.get(p.printer_id), p, scale, highWater);
  }
  for (const [id, card] of printerCards) {
    if (!seen.has(id)) { card.root.remove(); printerCards.delete(id); }
  }
}

// ---- tables, redrawn only when their data changed (a click is never lost to a redraw)

function table(headers, rows, emptyText) {
  if (!rows.length) return h("p", { class: "empty" }, emptyText);
  return h("table", {},
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows));
}

function cancelButton(jobId, size = "small", after = null) {
  return h("button", { type: "button", class: `${size} danger cancel`, onclick: async () => {
    if (!window.confirm(`Cancel ${jobId}?`)) return;
    const result = await act(`Cancel ${jobId}`, "POST", `/v1/jobs/${jobId}/cancel`);
    if (result && after) after();
  } }, "Cancel");
}

function renderDeadLetters(section, count) {
  $("dead-letter-count").textContent = String(count);
  if (!section || !changed("dead-letters", section)) return;
  const box = $("dead-letters");
  if (section.unavailable) { box.replaceChildren(h("p", { class: "empty" }, section.unavailable)); return; }
  const rows = section.dead_letters.map((d) => h("tr", { dataset: { job: d.job_id } },
    h("td", { class: "mono" }, d.job_id), h("td", {}, d.printer_id), h("td", {}, d.reason),
    h("td", {}, clock(d.dead_lettered_at)),
    h("td", { class: "row-actions" },
      h("button", { type: "button", class: "small",
                    onclick: () => act(`Redrive ${d.job_id}`, "POST", "/v1/dead-letters/redrive",
                                       { ids: [d.job_id] }) }, "Redrive"),
      cancelButton(d.job_id))));
  box.replaceChildren(table(["job", "printer", "reason", "at", ""], rows, "No dead letters."));
}

function renderParked(parked) {
  $("parked-count").textContent = String(parked.count);
  if (!changed("parked", parked)) return;
  const rows = parked.jobs.map((j) => h("tr", { dataset: { job: j.job_id } },
    h("td", { class: "mono" }, j.job_id), h("td", {}, j.attendee_id), h("td", {}, j.printer_id),
    h("td", {}, clock(j.updated_at)), h("td", { class: "row-actions" }, cancelButton(j.job_id))));
  $("parked").replaceChildren(
    table(["job", "attendee", "was on", "since", ""], rows, "No parked jobs."));
}

// A decision's targets map each receiving printer to how many jobs it took.
function targets(value) {
  if (Array.isArray(value)) return value.join(", ");
  return Object.entries(value || {}).map(([id, n]) => `${id} (${n})`).join(", ");
}

function renderFailovers(failovers) {
  if (!changed("failovers", failovers)) return;
  const rows = failovers.map((f) => h("tr", { dataset: { decision: f.decision_id } },
    h("td", {}, clock(f.at || f.decided_at || f.created_at)),
    h("td", {}, f.dead_printer_id), h("td", {}, targets(f.targets) || "—"),
    h("td", { class: "num" }, (f.drained_job_ids || []).length),
    h("td", { class: "num" }, (f.parked_job_ids || []).length),
    h("td", { class: "num" }, (f.inflight_job_ids || []).length),
    h("td", {}, f.reason || "")));
  $("failovers").replaceChildren(table(
    ["at", "printer", "to", "moved", "parked", "in flight", "reason"], rows, "No failovers."));
}

// Reconciliation, statistics and alerts come from their own endpoints
// (GET /v1/reconcile, /v1/stats, /v1/alerts): draw their JSON as labelled
// numbers and short lists, so a new field shows up without a page change.
const label = (key) => key.replaceAll("_", " ");
const NAMES = new Set(["reason", "hour", "source", "kind", "state"]);

function brief(item) {
  if (item === null || typeof item !== "object") return String(item);
  if (item.job_id) return item.job_id;
  return Object.entries(item).filter(([, v]) => typeof v !== "object")
    .map(([k, v]) => (k.endsWith("_id") || NAMES.has(k) ? v : `${label(k)} ${v}`)).join(" ");
}

function summary(key, value) {
  if (Array.isArray(value)) {
    const shown = value.slice(0, 5).map(brief).join(", ");
    return `${value.length}${shown ? ` — ${shown}` : ""}${value.length > 5 ? ", …" : ""}`;
  }
  if (value && typeof value === "object") {
    return Object.entries(value).map(([k, v]) => `${label(k)} ${summary(k, v)}`).join(" · ");
  }
  if (typeof value === "number" && key.endsWith("rate")) return `${(100 * value).toFixed(1)} %`;
  return String(value);
}

function renderReport(boxId, section, dangerKeys) {
  if (!section || !changed(boxId, section)) return;
  const box = $(boxId);
  if (section.unavailable) {
    box.replaceChildren(h("p", { class: "empty" }, `Not available: ${section.unavailable}`));
    return;
  }
  const items = Object.entries(section).filter(([key]) => key !== "by").map(([key, value]) => {
    const bad = dangerKeys.includes(key) && Array.isArray(value) && value.length > 0;
    const name = key === "rows" && section.by ? `by ${section.by}` : label(key);
    return [h("dt", {}, name), h("dd", { class: bad ? "bad" : "" }, summary(key, value))];
  });
  box.replaceChildren(h("dl", { class: "report" }, items.flat()));
}

function renderAlerts(section) {
  if (!section || !changed("alerts", section)) return;
  const list = Array.isArray(section.alerts) ? section.alerts : [];
  $("alerts-section").hidden = list.length === 0;
  $("alerts").replaceChildren(h("ul", { class: "alerts" }, list.map((a) => (
    typeof a === "object"
      ? h("li", { class: `severity-${a.severity || "warning"}` },
        [a.printer_id, a.kind, a.message].filter(Boolean).join(" · ") || JSON.stringify(a))
      : h("li", {}, String(a))))));
}

function render(snapshot) {
  snapshotAt = snapshot.at;
  $("venue").textContent = snapshot.venue;
  renderPrinters(snapshot.printers, snapshot.high_water_mark);
  renderDeadLetters(snapshot.dead_letters, snapshot.dead_letter_count);
  renderParked(snapshot.parked);
  renderFailovers(snapshot.failovers);
  renderReport("reconcile", snapshot.reconcile, ["printed_more_than_once"]);
  renderReport("stats", snapshot.stats, []);
  renderAlerts(snapshot.alerts);
}

// ---- job search

// Hints only, the server decides: what the API accepts for a job in each state.
const REPRINTABLE = new Set(["printed", "failed", "canceled"]);
const CANCELABLE = new Set(["queued", "leased", "dead_lettered", "held", "parked", "retrying"]);

// Names one reprint the operator means to make. crypto.getRandomValues, not
// randomUUID: the dashboard is often plain http on the venue LAN, not a secure context.
function newRequestId() {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return "dash-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function jobCard(job) {
  const reason = h("input", { class: "reason", placeholder: "reprint reason", maxlength: "200",
                              "aria-label": `reprint reason for ${job.job_id}` });
  // Kept until a reprint is confirmed: a double click, or a click again after an
  // error that lost the answer, gets the same reprint back, not a second badge.
  let requestId = newRequestId();
  const reprint = () => {
    if (!reason.value.trim()) { toast("A reprint needs a reason.", "bad"); reason.focus(); return; }
    act(`Reprint ${job.job_id}`, "POST", `/v1/jobs/${job.job_id}/reprint`,
        { reason: reason.value.trim(), request_id: requestId }).then((r) => {
      if (r) { requestId = newRequestId(); search(job.attendee_id); }
    });
  };
  const history = job.history.map((e) => h("tr", {},
    h("td", {}, clock(e.at)), h("td", {}, `${e.from || "—"} → ${e.to}`),
    h("td", {}, e.actor), h("td", {}, e.reason)));
  return h("article", { class: `job state-${job.state}`, dataset: { job: job.job_id } },
    h("header", {}, h("h3", { class: "mono" }, job.job_id), h("span", { class: "verdict" }, job.state)),
    h("p", { class: "facts" },
      `${job.printer_id} · attempts ${job.attempts} · prints ${job.prints} · `
      + `created ${clock(job.created_at)}`
      + (job.reprint_of ? ` · reprint of ${job.reprint_of}` : "")
      + (job.possible_duplicate ? " · possible duplicate" : "")),
    table(["at", "transition", "actor", "reason"], history, "No history."),
    h("div", { class: "actions" },
      REPRINTABLE.has(job.state) && [reason,
        h("button", { type: "button", class: "reprint", onclick: reprint }, "Reprint")],
      CANCELABLE.has(job.state) && cancelButton(job.job_id, "", () => search(job.attendee_id))));
}

async function search(attendeeId) {
  const box = $("results");
  try {
    const found = await api("GET", `/v1/jobs?attendee_id=${encodeURIComponent(attendeeId)}`);
    box.replaceChildren(...(found.jobs.length ? found.jobs.map(jobCard)
      : [h("p", { class: "empty" }, `No jobs for ${attendeeId}.`)]));
  } catch (error) {
    box.replaceChildren(h("p", { class: "error" }, error.message));
  }
}

// ---- wiring

function connect() {
  const source = new EventSource("/dashboard/stream");
  const live = $("live");
  source.addEventListener("snapshot", (event) => {
    live.textContent = "live";
    live.className = "live on";
    render(JSON.parse(event.data));
  });
  source.addEventListener("error", async () => {
    live.textContent = "reconnecting…";
    live.className = "live off";
    // EventSource gives up for good on a 401: find out whether we were signed out.
    if (source.readyState === EventSource.CLOSED) {
      try { await api("GET", "/dashboard/session"); setTimeout(connect, 2000); } catch (_) { /* reloads */ }
    }
  });
}

async function start() {
  const info = await api("GET", "/dashboard/session");
  session.csrf = info.csrf_token;
  session.header = info.csrf_header;
  $("operator").textContent = `signed in as ${info.operator}`;
  $("logout").addEventListener("click", async () => {
    await api("POST", "/dashboard/logout").catch(() => null);
    window.location.assign("/");
  });
  $("rebalance").addEventListener("click", async () => {
    const result = await act("Rebalance", "POST", "/v1/rebalance", {});
    if (result) toast(`Rebalance moved ${result.moved.length} job(s)`, "ok");
  });
  $("redrive-all").addEventListener("click", () => {
    if (window.confirm("Redrive every dead letter?")) {
      act("Redrive all", "POST", "/v1/dead-letters/redrive", {});
    }
  });
  $("search").addEventListener("submit", (event) => {
    event.preventDefault();
    search($("attendee").value.trim());
  });
  connect();
}

document.addEventListener("DOMContentLoaded", () => {
  start().catch((error) => toast(`The dashboard could not start: ${error.message}`, "bad"));
});
