// Small DOM helpers. Every value from the server goes into the page as text
// (textContent, attributes), never as HTML.

export const $ = (id) => document.getElementById(id);

function fill(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.setAttribute("class", value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// Replace a box's content; false, null and "" (a condition not met) are left out.
export function put(box, ...children) {
  box.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined
    && c !== false && c !== ""));
}

export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

export function svg(tag, attrs, ...children) {
  return fill(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);
}

// An identifier (printer, job): one line, never broken at its hyphen.
export const idText = (value, tag = "span") => h(tag, { class: "id" }, value);

export function age(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  seconds = Math.max(0, seconds); // two clocks a few ms apart
  if (seconds < 10) return `${seconds.toFixed(1)} s ago`;
  if (seconds < 120) return `${Math.round(seconds)} s ago`;
  return `${Math.round(seconds / 60)} min ago`;
}

export function clock(unixSeconds) {
  if (!unixSeconds) return "";
  return new Date(unixSeconds * 1000).toLocaleTimeString([], { hour12: false });
}

export const count = (n) => (typeof n === "number" ? n.toLocaleString("en") : "—");

export function toast(message, kind) {
  const el = $("toast");
  el.textContent = message;
  el.className = `toast show ${kind || "ok"}`;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.className = "toast"; }, kind === "bad" ? 9000 : 5000);
}

const lastRendered = new Map(); // section -> JSON it was last drawn from

// Redraw a section only when its data changed: a click is never lost to a redraw.
export function changed(section, data) {
  const text = JSON.stringify(data);
  if (lastRendered.get(section) === text) return false;
  lastRendered.set(section, text);
  return true;
}

// A table whose cells carry their column's name, so that a phone can show
// each row as a stack of labelled lines instead of scrolling sideways.
export function table(headers, rows, emptyText, className = "stack") {
  if (!rows.length) return h("p", { class: "empty" }, emptyText);
  for (const row of rows) {
    [...row.children].forEach((cell, i) => { if (headers[i]) cell.dataset.label = headers[i]; });
  }
  return h("table", { class: className },
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows));
}
