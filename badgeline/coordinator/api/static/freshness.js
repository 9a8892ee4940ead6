// How fresh the picture is. The stream pushes every second; when no push has
// come for a few seconds the page says so in a banner, with the age of what it
// shows, and greys everything that is now history. It asks /healthz why.
import { $ } from "./dom.js";

const STALE_AFTER_MS = 3500;
const PROBE_EVERY_MS = 5000;
let receivedAt = 0; // performance.now() of the last snapshot
let probedAt = -Infinity;
let cause = "";

function ago(seconds) {
  if (seconds < 120) return `${Math.round(seconds)} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

async function probe() {
  probedAt = performance.now();
  try {
    const response = await fetch("/healthz", { cache: "no-store" });
    cause = response.ok ? "The coordinator answers, but its live updates stopped; reconnecting."
      : "The coordinator answers, but cannot reach its Redis: nothing can change until it does.";
  } catch (_) {
    cause = "The coordinator does not answer: it is down, or the network to it is cut.";
  }
  update();
}

function setLive(text, on) {
  const live = $("live");
  live.textContent = text;
  live.className = `live ${on ? "on" : "off"}`;
}

export function update() {
  if (!receivedAt) return;
  const idleMs = performance.now() - receivedAt;
  const stale = idleMs > STALE_AFTER_MS;
  document.body.classList.toggle("stale", stale);
  $("stale-banner").hidden = !stale;
  if (!stale) { cause = ""; return; }
  setLive("offline", false);
  const headline = cause.includes("does not answer") || !cause
    ? "Coordinator unreachable" : "No live updates";
  $("stale-headline").textContent = headline;
  $("stale-age").textContent = `last update ${ago(idleMs / 1000)}`;
  $("stale-cause").textContent = cause || "Checking the coordinator…";
  if (performance.now() - probedAt > PROBE_EVERY_MS) probe();
}

export function markFresh() {
  receivedAt = performance.now();
  setLive("live", true);
  update();
}

export function markReconnecting() {
  if (!document.body.classList.contains("stale")) setLive("reconnecting…", false);
}

export function startClock() {
  setInterval(update, 1000);
}
