// Finding an attendee's jobs, their history, and a reprint or a cancel.
import { $, clock, h, idText, table, toast } from "./dom.js";
import { act, api } from "./api.js";
import { cancelButton } from "./reports.js";

// Hints only, the server decides: what the API accepts for a job in each state.
const REPRINTABLE = new Set(["printed", "failed", "canceled", "expired"]);
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
    h("td", { class: "wrap" }, e.actor), h("td", { class: "wrap" }, e.reason)));
  return h("article", { class: `job state-${job.state}`, dataset: { job: job.job_id } },
    h("header", {}, idText(job.job_id, "h3"), h("span", { class: "verdict" }, job.state)),
    h("p", { class: "facts" },
      `${job.printer_id} · attempts ${job.attempts} · prints ${job.prints} · `
      + `created ${clock(job.created_at)}`
      + (job.reprint_of ? ` · reprint of ${job.reprint_of}` : "")
      + (job.expires_at ? ` · ${job.state === "expired" ? "expired" : "expires"} `
        + clock(job.expires_at) : "")
      + (job.possible_duplicate ? " · possible duplicate" : "")),
    table(["at", "transition", "actor", "reason"], history, "No history."),
    h("div", { class: "actions" },
      REPRINTABLE.has(job.state) && [reason,
        h("button", { type: "button", class: "reprint", onclick: reprint }, "Reprint")],
      CANCELABLE.has(job.state) && cancelButton(job.job_id, "", () => search(job.attendee_id))));
}

export async function search(attendeeId) {
  const box = $("results");
  try {
    const found = await api("GET", `/v1/jobs?attendee_id=${encodeURIComponent(attendeeId)}`);
    box.replaceChildren(...(found.items.length ? found.items.map(jobCard)
      : [h("p", { class: "empty" }, `No jobs for ${attendeeId}.`)]));
  } catch (error) {
    if (error.status !== 401) box.replaceChildren(h("p", { class: "error" }, error.message));
  }
}
