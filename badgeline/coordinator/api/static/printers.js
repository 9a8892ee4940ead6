// The printers, most troubled first (the coordinator's `triage` order): one card
// each, updated in place so that what an operator types survives every push.
import { $, age, clock, h, idText, put, toast } from "./dom.js";
import { act, api } from "./api.js";
import { sparkline } from "./charts.js";

const cards = new Map(); // printer id -> {root, parts}
const MAX_MINUTES = 7 * 24 * 60; // the pause route's own limit (7 days)
const REASON_MAX = 200; // when the coordinator's schema names no limit
let reasonField = null; // the pause route's `reason` schema, when it takes one
let snapshotAt = 0;

export function configurePause(fields) { reasonField = fields.reason || null; }

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

const DOWN = new Set(["dead", "jammed", "paper_out"]);

function printerCard(id) {
  const field = (cls) => h("dd", { class: cls });
  const parts = {
    verdict: h("span", { class: "verdict" }),
    pauseTag: h("span", { class: "tag pause-tag", hidden: true }),
    detail: h("p", { class: "detail" }),
    fill: h("div", { class: "fill" }),
    depth: h("span", { class: "depth" }),
    depthTrend: h("div", { class: "trend-slot" }),
    rate: h("span", { class: "rate" }),
    rateTrend: h("div", { class: "trend-slot" }),
    inflight: field("inflight"), heartbeat: field("heartbeat"), paper: field("paper"),
    problems: field("problems"), confirmation: field("confirmation"), agent: field("agent"),
    minutes: h("input", { class: "minutes", id: `pause-minutes-${id}`, type: "number",
                          min: "1", max: String(MAX_MINUTES), step: "any", inputmode: "decimal",
                          placeholder: "until resumed" }),
    reason: h("input", { class: "reason", id: `pause-reason-${id}`, type: "text",
                         autocomplete: "off", placeholder: "e.g. reloading paper" }),
    resume: h("button", { type: "button", class: "resume", onclick: () => resumePrinter(id) },
      "Resume"),
  };
  // novalidate: the page's own checks say what to fix, in words, for every field.
  parts.pauseForm = h("form", { class: "pause-form", hidden: true, novalidate: true,
                                onsubmit: (event) => {
    event.preventDefault();
    pausePrinter(id, parts);
  } },
  h("label", { for: parts.minutes.id }, "Minutes"), parts.minutes,
  h("label", { for: parts.reason.id }, "Reason"), parts.reason,
  h("div", { class: "form-buttons" },
    h("button", { type: "submit", class: "primary pause-confirm" }, `Pause ${id}`),
    h("button", { type: "button", onclick: () => togglePause(parts, false) }, "Cancel")));
  parts.pauseToggle = h("button", { type: "button", class: "pause", "aria-expanded": "false",
                                    onclick: () => togglePause(parts) }, "Pause…");
  const root = h("article", { class: "printer", dataset: { printer: id } },
    h("header", {}, idText(id, "h3"), parts.verdict, parts.pauseTag),
    parts.detail,
    h("div", { class: "metrics" },
      h("div", { class: "metric" }, parts.depth, h("div", { class: "bar" }, parts.fill),
        parts.depthTrend),
      h("div", { class: "metric" }, parts.rate, parts.rateTrend)),
    h("dl", {},
      h("dt", {}, "In flight"), parts.inflight,
      h("dt", {}, "Heartbeat"), parts.heartbeat,
      h("dt", {}, "Paper"), parts.paper,
      h("dt", {}, "Problems"), parts.problems,
      h("dt", {}, "Printed means"), parts.confirmation,
      h("dt", {}, "Agent"), parts.agent),
    h("div", { class: "actions" }, parts.pauseToggle, parts.resume,
      h("button", { type: "button", class: "drain danger", onclick: () => drainPrinter(id) },
        "Drain")),
    parts.pauseForm);
  return { root, parts };
}

function togglePause(parts, open = parts.pauseForm.hidden) {
  parts.pauseForm.hidden = !open;
  parts.pauseToggle.setAttribute("aria-expanded", String(open));
  if (open) parts.minutes.focus();
}

function pauseTag(p, t) {
  if (!p.paused) return "";
  const until = p.paused_until && p.paused_until - snapshotAt < 300 * 24 * 3600
    ? `until ${clock(p.paused_until)}` : "until resumed";
  if (t.condition === "paused" || t.condition === "draining") return until;
  return `${t.drained ? "drained" : "paused"}, ${until}`;
}

function rateText(rate) {
  if (rate === null || rate === undefined) return "measuring…";
  return `${rate} badges/min`;
}

function updateCard(card, p, t, scale, highWater, stepS) {
  const { root, parts } = card;
  root.className = `printer cond-${t.condition}${p.paused ? " is-paused" : ""}`;
  root.dataset.condition = t.condition;
  parts.verdict.textContent = t.label;
  parts.pauseTag.textContent = pauseTag(p, t);
  parts.pauseTag.hidden = !p.paused;
  // The operator's reason for a pause or a reject, as they typed it (text, never HTML).
  const reason = (p.paused && p.paused_reason) || (p.rejecting && p.rejecting_reason);
  parts.detail.textContent = [t.detail, reason && `“${reason}”`]
    .filter(Boolean).join(" · ");
  parts.fill.style.width = `${Math.min(100, (100 * p.queue_depth) / scale)}%`;
  parts.fill.classList.toggle("near-full", p.queue_depth >= 0.8 * highWater);
  parts.depth.textContent = `${p.queue_depth} queued`;
  parts.depth.title = `high-water mark ${highWater}`
    + (t.wait_min !== null ? `; about ${t.wait_min} min of work at the current rate` : "");
  parts.rate.textContent = rateText(t.trend.badges_per_min);
  const trendKey = JSON.stringify(t.trend);
  if (card.trendKey !== trendKey) {
    card.trendKey = trendKey;
    const span = t.trend.depths.length * stepS;
    const last = span < 120 ? `${Math.round(span)} s` : `${Math.round(span / 60)} min`;
    parts.depthTrend.replaceChildren(sparkline(t.trend.depths,
      { className: "spark-depth", title: `queue depth, last ${last}` }));
    parts.rateTrend.replaceChildren(sparkline(t.trend.rates,
      { className: "spark-rate", title: `badges per minute, last ${last}` }));
  }
  parts.inflight.replaceChildren(...(p.in_flight.length ? p.in_flight.map((j) => idText(j)) : ["—"]));
  parts.heartbeat.textContent = age(p.last_heartbeat_age_s);
  parts.heartbeat.classList.toggle("stale-beat", (p.last_heartbeat_age_s ?? 1e9) > 5);
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
  parts.resume.hidden = !p.paused;
}

// While the operator types into a card, cards do not move under the cursor.
function editing(box) {
  const active = document.activeElement;
  return active && active.tagName === "INPUT" && box.contains(active);
}

function renderSummary(triage) {
  const tally = (pred) => triage.filter(pred).length;
  const items = [
    ["down", tally((t) => DOWN.has(t.condition)), "bad"],
    ["degraded", tally((t) => t.condition === "degraded"), "warn"],
    ["paused", tally((t) => t.condition === "paused"), "paused"],
    ["draining", tally((t) => t.condition === "draining"), "draining"],
    ["rejecting", tally((t) => t.condition === "rejecting"), "draining"],
    ["backlog", tally((t) => t.condition === "backlog"), "warn"],
    ["healthy", tally((t) => t.condition === "healthy"), "ok"],
  ].filter(([, n]) => n > 0);
  const rates = triage.map((t) => t.trend.badges_per_min).filter((r) => r !== null);
  const total = rates.length ? `${rates.reduce((a, b) => a + b, 0).toFixed(1)} badges/min` : "";
  put($("fleet-summary"),
    ...items.map(([name, n, tone]) => h("span", { class: `chip ${tone}` }, `${n} ${name}`)),
    total && h("span", { class: "chip total" }, total));
}

export function renderPrinters(snapshot) {
  snapshotAt = snapshot.at;
  const box = $("printers");
  const triage = snapshot.triage || [];
  const printers = new Map(snapshot.printers.map((p) => [p.printer_id, p]));
  renderSummary(triage);
  if (!triage.length) return;
  box.querySelector(".empty")?.remove();
  // Bars share one scale so that skew between printers is visible at a glance.
  const scale = Math.max(10, ...snapshot.printers.map((p) => p.queue_depth));
  for (const t of triage) {
    if (!cards.has(t.printer_id)) {
      const card = printerCard(t.printer_id);
      cards.set(t.printer_id, card);
      box.append(card.root);
    }
    updateCard(cards.get(t.printer_id), printers.get(t.printer_id), t, scale,
      snapshot.high_water_mark, snapshot.trend_step_s || 30);
  }
  for (const id of [...cards.keys()]) if (!printers.has(id)) removeCard(id);
  if (editing(box)) return;
  triage.forEach((t, i) => {
    const root = cards.get(t.printer_id).root;
    if (box.children[i] !== root) box.insertBefore(root, box.children[i] || null);
  });
}

function removeCard(id) {
  cards.get(id)?.root.remove();
  cards.delete(id);
}

// The card may be older than the fleet: ask the coordinator first, as the CLI
// does, so that an action never names a printer it no longer knows.
async function stillKnown(id) {
  let printers;
  try {
    printers = (await api("GET", "/v1/printers?limit=500", undefined, { forAction: true })).items;
  } catch (error) {
    if (error.status !== 401) toast(`${id}: ${error.message}`, "bad");
    return false;
  }
  if (printers.some((p) => p.printer_id === id)) return true;
  toast(`${id} is no longer known to the coordinator (its record is gone): nothing was done.`,
    "bad");
  removeCard(id);
  return false;
}

function refuse(input, message) {
  input.setAttribute("aria-invalid", "true");
  input.addEventListener("input", () => input.removeAttribute("aria-invalid"), { once: true });
  input.focus();
  toast(message, "bad");
}

async function pausePrinter(id, parts) {
  const raw = parts.minutes.value.trim();
  const minutes = raw === "" ? null : Number(raw);
  if (minutes !== null && !(minutes > 0 && minutes <= MAX_MINUTES)) {
    refuse(parts.minutes, `Pause for up to ${MAX_MINUTES} minutes (7 days), or leave Minutes `
      + "empty to pause until resumed. Nothing was sent.");
    return;
  }
  const reason = parts.reason.value.trim();
  const limit = (reasonField && reasonField.maxLength) || REASON_MAX;
  if (reason.length > limit) {
    refuse(parts.reason, `The reason is ${reason.length.toLocaleString("en")} characters long; `
      + `keep it to ${limit} or fewer. Nothing was sent.`);
    return;
  }
  if (!await stillKnown(id)) return;
  const body = {};
  if (minutes !== null) body.for_s = Math.round(minutes * 60);
  if (reason && reasonField) body.reason = reason;
  const span = minutes === null ? "until resumed" : `for ${minutes} min`;
  const unsaved = reason && !reasonField
    ? " (this coordinator does not record pause reasons yet: the reason was not saved)" : "";
  const done = await act(`Pause ${id}`, "POST", `/v1/printers/${id}/pause`, body,
    () => `Paused ${id} ${span}${unsaved}`);
  if (done) {
    parts.minutes.value = "";
    parts.reason.value = "";
    togglePause(parts, false);
  }
}

async function resumePrinter(id) {
  if (await stillKnown(id)) await act(`Resume ${id}`, "POST", `/v1/printers/${id}/resume`);
}

async function drainPrinter(id) {
  if (!await stillKnown(id)) return;
  if (!window.confirm(`Drain ${id}? It is paused and its waiting jobs move to other printers.`)) {
    return;
  }
  await act(`Drain ${id}`, "POST", `/v1/printers/${id}/drain`, {}, (decision) => (
    decision && decision.drained_job_ids
      ? `Drained ${id}: ${decision.drained_job_ids.length} moved, `
        + `${(decision.parked_job_ids || []).length} parked`
      : `Drain ${id}: done`));
}

// Per printer, for the statistics table: badges per minute now.
export function ratesByPrinter(snapshot) {
  return new Map((snapshot.triage || []).map((t) => [t.printer_id, t.trend.badges_per_min]));
}
