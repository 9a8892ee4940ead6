// badgeline operator dashboard: one SSE stream for the picture, the ordinary
// JSON API for every action. No framework and no build step: a few ES modules
// (printers, reports, jobs, charts, freshness), all from this origin.
import { $, toast } from "./dom.js";
import { act, api, loadSession, onAfterAction, pauseBodyFields } from "./api.js";
import { markFresh, markReconnecting, startClock } from "./freshness.js";
import { configurePause, ratesByPrinter, renderPrinters } from "./printers.js";
import {
  renderAlerts, renderDeadLetters, renderFailovers, renderParked, renderReconcile, renderStats,
} from "./reports.js";
import { search } from "./jobs.js";

const RECONNECT_AFTER_MS = 2000;

function render(snapshot) {
  $("venue").textContent = snapshot.venue;
  renderPrinters(snapshot);
  renderAlerts(snapshot.alerts);
  renderDeadLetters(snapshot.dead_letters, snapshot.dead_letter_count);
  renderParked(snapshot.parked);
  renderFailovers(snapshot.failovers);
  renderReconcile(snapshot.reconcile);
  renderStats(snapshot.stats, snapshot.stats_by_hour, ratesByPrinter(snapshot), snapshot.at);
}

async function refresh() {
  try {
    render(await api("GET", "/dashboard/snapshot"));
    markFresh();
  } catch (_) { /* the stream catches up; a signed-out session has left the page */ }
}

function connect() {
  const source = new EventSource("/dashboard/stream");
  source.addEventListener("snapshot", (event) => {
    render(JSON.parse(event.data));
    markFresh();
  });
  source.addEventListener("error", async () => {
    markReconnecting();
    // The browser retries a dropped connection by itself, but gives up for good
    // on an HTTP error: a 401 (signed out), a 503 (Redis away), a proxy's 502.
    if (source.readyState !== EventSource.CLOSED) return;
    try {
      await api("GET", "/dashboard/session"); // a 401 leaves for the sign-in page
    } catch (error) {
      if (error.status === 401) return;
    }
    setTimeout(connect, RECONNECT_AFTER_MS);
  });
}

async function start() {
  const info = await loadSession();
  configurePause(await pauseBodyFields());
  onAfterAction(refresh);
  $("logout").addEventListener("click", async () => {
    await api("POST", "/dashboard/logout").catch(() => null);
    window.location.assign("/");
  });
  $("rebalance").addEventListener("click", () => act("Rebalance", "POST", "/v1/rebalance", {},
    (result) => `Rebalance moved ${result.moved.length} job(s)`));
  $("redrive-all").addEventListener("click", () => {
    if (window.confirm("Redrive every dead letter?")) {
      act("Redrive all", "POST", "/v1/dead-letters/redrive", {});
    }
  });
  $("search").addEventListener("submit", (event) => {
    event.preventDefault();
    search($("attendee").value.trim());
  });
  startClock();
  connect();
  $("operator").textContent = `signed in as ${info.operator}`; // the page is ready
}

start().catch((error) => {
  if (error.status !== 401) toast(`The dashboard could not start: ${error.message}`, "bad");
});
