// The JSON API, as the signed-in operator: the session's CSRF token on every
// write, a session that ended sends the operator back to sign in (saying so),
// and an action's outcome in the toast.
import { toast } from "./dom.js";

export const session = { csrf: "", header: "X-CSRF-Token" };
let afterAction = () => {};

export class ApiError extends Error {
  constructor(status, message, code) { super(message); this.status = status; this.code = code; }
}

// The login page shows why (a fixed text per reason, chosen by the server).
export function sessionEnded(why) {
  window.location.assign(`/?ended=${why}`);
}

export async function loadSession() {
  const info = await api("GET", "/dashboard/session");
  session.csrf = info.csrf_token;
  session.header = info.csrf_header;
  return info;
}

function unreachable() {
  return new ApiError(0, "the coordinator did not answer (it is down or the network is cut); "
    + "check once it is back whether this was done", "unreachable");
}

// `forAction`: a read made on the way to an action (whose 401 means the action
// was not done); `retried`: the one retry after a replaced CSRF token.
export async function api(method, path, body, { forAction = false, retried = false } = {}) {
  const headers = { Accept: "application/json" };
  // Cookie-authenticated writes must carry the session's CSRF token.
  if (method !== "GET") headers[session.header] = session.csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (_) {
    throw unreachable();
  }
  let data = null;
  try { data = await response.json(); } catch (_) { /* an empty or non-JSON body */ }
  const error = (data && data.error) || {};
  if (response.status === 401) {
    // Nothing was done: the session is gone (signed out in another tab, expired,
    // or its token rotated out). Say so on the sign-in page.
    sessionEnded(method === "GET" && !forAction ? "session" : "action");
    throw new ApiError(401, "your session has ended", "unauthorized");
  }
  if (response.status === 403 && !retried && (error.message || "").includes(session.header)) {
    // A sign-in in another tab replaced this tab's session: same cookie jar, new
    // CSRF token. The write was refused before it did anything; fetch the new
    // token and send it once more.
    await loadSession();
    return api(method, path, body, { forAction, retried: true });
  }
  if (!response.ok) {
    throw new ApiError(response.status, error.message || response.statusText || "refused",
      error.code);
  }
  return data;
}

export function onAfterAction(callback) { afterAction = callback; }

// Run an operator action, report it, then redraw at once instead of at the next push.
export async function act(label, method, path, body, doneText) {
  try {
    const result = await api(method, path, body);
    toast(doneText ? doneText(result) : `${label}: done`, "ok");
    afterAction();
    return result;
  } catch (error) {
    if (error.status === 401) return null; // on its way to the sign-in page
    const hint = error.status === 404 && path.endsWith("/reprint")
      ? " (this coordinator has no reprint endpoint yet)" : "";
    toast(`${label} failed: ${error.message}${hint}`, "bad");
    return null;
  }
}

// What the pause route's body takes, read from the coordinator's own OpenAPI
// document: a `reason` is sent only to a coordinator that accepts one.
export async function pauseBodyFields() {
  try {
    const doc = await api("GET", "/v1/openapi.json");
    const op = doc.paths["/v1/printers/{printer_id}/pause"].post;
    let schema = op.requestBody.content["application/json"].schema;
    if (schema.$ref) schema = doc.components.schemas[schema.$ref.split("/").pop()];
    return schema.properties || {};
  } catch (error) {
    if (error.status === 401) throw error;
    return {}; // unknown: send the duration only
  }
}
