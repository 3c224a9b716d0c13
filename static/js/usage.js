// The Usage page's charts (Chart.js, vendored in static/vendor/chartjs). The figures come from
// the page (json_script "usage-data"); every one is also in a table beside its chart. Colours
// are the theme's custom properties, read again when the theme changes.
import { format, gettext } from "./i18n.js";
const data = JSON.parse(document.getElementById("usage-data").textContent);
const charts = [];

// The theme's colours are light-dark() pairs, which a canvas cannot read: a probe element
// resolves each to the rgb() the page shows now.
const probe = document.createElement("span");
probe.hidden = true;
document.body.append(probe);
function css(name) {
  probe.style.color = `var(${name})`;
  return getComputedStyle(probe).color;
}

function palette() {
  return {
    text: css("--muted"),
    grid: css("--border"),
    accent: css("--accent"),
    accentWeak: css("--accent-border"),
    ok: css("--ok"),
    bad: css("--bad"),
    warn: css("--warn"),
    purple: css("--purple"),
  };
}

const money = (v) => (v >= 0.01 || v === 0 ? `$${v.toFixed(2)}` : `$${v.toFixed(4)}`);
const compact = (v) => Intl.NumberFormat(undefined, { notation: "compact" }).format(v);

function baseOptions(colors) {
  return {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    plugins: { legend: { labels: { color: colors.text, boxWidth: 12 } } },
    scales: {},
  };
}

function axis(colors, extra = {}) {
  return {
    ticks: { color: colors.text, ...(extra.ticks || {}) },
    grid: { color: colors.grid, ...(extra.grid || {}) },
    ...extra.rest,
  };
}

function daysChart(canvas, colors) {
  const d = data.days;
  const options = baseOptions(colors);
  options.interaction = { mode: "index", intersect: false };
  options.scales = {
    x: axis(colors, { ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: 8 }, grid: { display: false }, rest: { stacked: true } }),
    y: axis(colors, { ticks: { callback: compact }, rest: { stacked: true, beginAtZero: true, title: { display: true, text: gettext("tokens"), color: colors.text } } }),
    cost: axis(colors, { ticks: { callback: money }, grid: { display: false }, rest: { position: "right", beginAtZero: true } }),
  };
  options.plugins.tooltip = {
    callbacks: { label: (c) => (c.dataset.yAxisID === "cost" ? format(gettext("cost %(cost)s"), { cost: money(c.parsed.y) }) : `${c.dataset.label} ${c.parsed.y.toLocaleString()}`) },
  };
  return new Chart(canvas, {
    type: "bar",
    data: {
      labels: d.labels.map((day) => day.slice(5)),
      datasets: [
        { label: gettext("tokens in"), data: d.input, backgroundColor: colors.accent, stack: "t", maxBarThickness: 48 },
        { label: gettext("tokens out"), data: d.output, backgroundColor: colors.purple, stack: "t", maxBarThickness: 48 },
        { label: gettext("cost"), data: d.cost, type: "line", yAxisID: "cost", borderColor: colors.warn, backgroundColor: colors.warn, pointRadius: 2, cubicInterpolationMode: "monotone" },
      ],
    },
    options,
  });
}

function breakdownChart(canvas, rows, colors) {
  const priced = rows.cost.some((v) => v > 0);
  const options = baseOptions(colors);
  options.indexAxis = "y";
  options.plugins.legend.display = false;
  options.scales = {
    x: axis(colors, { ticks: { callback: priced ? money : compact, maxTicksLimit: 5 }, rest: { beginAtZero: true } }),
    y: axis(colors, { grid: { display: false }, ticks: { callback(value) { const l = this.getLabelForValue(value); return l.length > 18 ? `${l.slice(0, 17)}…` : l; } } }),
  };
  options.plugins.tooltip = { callbacks: { label: (c) => (priced ? format(gettext("cost %(cost)s"), { cost: money(c.parsed.x) }) : format(gettext("%(count)s tokens"), { count: c.parsed.x.toLocaleString() })) } };
  return new Chart(canvas, {
    type: "bar",
    data: { labels: rows.labels, datasets: [{ label: priced ? gettext("cost") : gettext("tokens"), data: priced ? rows.cost : rows.tokens, backgroundColor: colors.accent, borderRadius: 3, maxBarThickness: 26 }] },
    options,
  });
}

function toolsChart(canvas, colors) {
  const t = data.tools;
  const options = baseOptions(colors);
  options.indexAxis = "y";
  options.scales = {
    x: axis(colors, { ticks: { callback: compact, precision: 0 }, rest: { stacked: true, beginAtZero: true } }),
    y: axis(colors, { grid: { display: false }, rest: { stacked: true } }),
  };
  return new Chart(canvas, {
    type: "bar",
    data: {
      labels: t.labels,
      datasets: [
        { label: gettext("succeeded or running"), data: t.calls, backgroundColor: colors.ok, maxBarThickness: 26 },
        { label: gettext("failed or refused"), data: t.failed, backgroundColor: colors.bad, maxBarThickness: 26 },
      ],
    },
    options,
  });
}

function draw() {
  while (charts.length) charts.pop().destroy();
  const colors = palette();
  const days = document.getElementById("chart-days");
  if (days) charts.push(daysChart(days, colors));
  for (const key of ["people", "groups", "models", "agents"]) {
    const canvas = document.getElementById(`chart-${key}`);
    if (canvas && data[key].labels.length) charts.push(breakdownChart(canvas, data[key], colors));
  }
  const tools = document.getElementById("chart-tools");
  if (tools && data.tools.labels.length) charts.push(toolsChart(tools, colors));
  document.body.dataset.chartsReady = "true";
}

draw();
// The theme toggle sets data-theme on <html>; the system theme may change too.
new MutationObserver(draw).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", draw);
