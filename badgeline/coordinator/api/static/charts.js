// Small charts as inline SVG and CSS widths: nothing fetched from elsewhere (the
// page's Content-Security-Policy allows only this origin) and no library.
// Colours come from the style sheet (classes), so they follow its palette.
import { h, svg } from "./dom.js";

// A line over recent values, oldest first, stretched to its box's width; gaps
// (null) break the line. The scale starts at 0: a flat line at the bottom is none.
export function sparkline(values, { width = 100, height = 24, className = "", title = "" } = {}) {
  const known = values.filter((v) => v !== null && v !== undefined);
  const top = Math.max(1, ...known);
  const step = values.length > 1 ? width / (values.length - 1) : width;
  const y = (v) => (height - 2 - ((height - 4) * v) / top).toFixed(1);
  const lines = [];
  let current = [];
  values.forEach((v, i) => {
    if (v === null || v === undefined) {
      if (current.length) lines.push(current);
      current = [];
    } else current.push([(i * step).toFixed(1), y(v)]);
  });
  if (current.length) lines.push(current);
  return svg("svg", { class: `spark ${className}`, viewBox: `0 0 ${width} ${height}`,
                      preserveAspectRatio: "none", role: "img", "aria-label": title },
    svg("title", {}, title),
    svg("line", { class: "spark-base", x1: 0, y1: height - 1, x2: width, y2: height - 1 }),
    // A lone reading is a short dash: a circle would be stretched with the box.
    lines.map((points) => svg("polyline", { points: (points.length === 1
      ? [[Number(points[0][0]) - 1, points[0][1]], [Number(points[0][0]) + 1, points[0][1]]]
      : points).map((p) => p.join(",")).join(" ") })));
}

// One horizontal bar split into parts: [{label, value, className}].
export function stackedBar(parts, total) {
  const sum = total || parts.reduce((n, p) => n + p.value, 0);
  const bar = h("div", { class: "stacked", role: "img",
                         "aria-label": parts.map((p) => `${p.label} ${p.value}`).join(", ") });
  for (const part of parts) {
    if (!part.value || !sum) continue;
    const segment = h("span", { class: `segment ${part.className}`, title: `${part.label}: ${part.value}` });
    segment.style.width = `${(100 * part.value) / sum}%`;
    bar.append(segment);
  }
  return bar;
}

// A bar whose length is value / max, behind its number (tables of counts).
export function meter(value, max, className = "") {
  const bar = h("span", { class: `meter ${className}` }, h("span", { class: "meter-fill" }));
  bar.firstChild.style.width = `${max ? Math.min(100, (100 * value) / max) : 0}%`;
  return bar;
}

// Columns with a label under each: [{label, value}], e.g. badges per hour.
export function columns(items, { width = 300, height = 90, title = "" } = {}) {
  const top = Math.max(1, ...items.map((i) => i.value));
  const slot = width / Math.max(1, items.length);
  const plot = height - 16;
  return svg("svg", { class: "columns-chart", viewBox: `0 0 ${width} ${height}`, role: "img",
                      "aria-label": title },
    svg("title", {}, title),
    items.map((item, i) => {
      const tall = Math.max(item.value ? 1 : 0, (plot * item.value) / top);
      const x = i * slot + slot * 0.15;
      return svg("g", {},
        svg("rect", { x: x.toFixed(1), y: (plot - tall).toFixed(1), width: (slot * 0.7).toFixed(1),
                      height: tall.toFixed(1) },
          svg("title", {}, `${item.label}: ${item.value}`)),
        svg("text", { x: (x + slot * 0.35).toFixed(1), y: height - 3, "text-anchor": "middle" },
          item.label));
    }));
}
