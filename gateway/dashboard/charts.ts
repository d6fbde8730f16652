/**
 * Server-rendered SVG charts (no client library): the trust score history as a line over the display bands, and
 * orders per day as stacked bars. Pure functions of their data; text goes through the escaping template, and
 * colours are presentation attributes (the page's CSP allows no inline style).
 */
import { html, type Html } from "./html.ts";

const W = 640;
const H = 220;
const PAD = { l: 40, r: 12, t: 12, b: 28 };
const fmtDay = (ms: number): string => new Date(ms).toISOString().slice(5, 10);

export interface ScorePoint {
  at: number;
  score0to1: number;
}

/** Trust score history (0..1) with the agent threshold (0.7) and discoverability line (0.3). */
export function scoreChart(points: readonly ScorePoint[], opts: { from: number; to: number; label: string }): Html {
  const iw = W - PAD.l - PAD.r;
  const ih = H - PAD.t - PAD.b;
  const span = Math.max(1, opts.to - opts.from);
  const x = (at: number) => PAD.l + ((Math.min(opts.to, Math.max(opts.from, at)) - opts.from) / span) * iw;
  const y = (v: number) => PAD.t + (1 - Math.min(1, Math.max(0, v))) * ih;
  const r = (n: number) => Math.round(n * 10) / 10;
  const grid = [0, 0.25, 0.5, 0.75, 1].map(
    (v) => html`<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${r(y(v))}" y2="${r(y(v))}" stroke="#d8dde3" stroke-width="1"/>
<text x="${PAD.l - 6}" y="${r(y(v)) + 4}" text-anchor="end" font-size="12" fill="#4a5561">${v.toFixed(2)}</text>`,
  );
  const thresholds = [
    { v: 0.7, text: "agent checkout 0.70", colour: "#1b7f3b" },
    { v: 0.3, text: "discoverable 0.30", colour: "#b35c00" },
  ].map(
    (t) => html`<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${r(y(t.v))}" y2="${r(y(t.v))}" stroke="${t.colour}" stroke-dasharray="4 3" stroke-width="1"/>
<text x="${W - PAD.r - 4}" y="${r(y(t.v)) - 4}" text-anchor="end" font-size="12" fill="${t.colour}">${t.text}</text>`,
  );
  const sorted = [...points].sort((a, b) => a.at - b.at);
  const path = sorted.map((p, i) => `${i ? "L" : "M"}${r(x(p.at))},${r(y(p.score0to1))}`).join(" ");
  const dots = sorted.map((p) => html`<circle cx="${r(x(p.at))}" cy="${r(y(p.score0to1))}" r="3" fill="#1f5fbf"><title>${new Date(p.at).toISOString().slice(0, 16).replace("T", " ")} UTC: ${p.score0to1.toFixed(3)}</title></circle>`);
  const last = sorted.at(-1);
  const summary = last ? `${opts.label}: ${sorted.length} scores, latest ${last.score0to1.toFixed(2)}` : `${opts.label}: no scores yet`;
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${summary}" preserveAspectRatio="xMidYMid meet">
<title>${summary}</title>${grid}${thresholds}
${sorted.length > 1 ? html`<path d="${path}" fill="none" stroke="#1f5fbf" stroke-width="2"/>` : ""}${dots}
<text x="${PAD.l}" y="${H - 8}" font-size="12" fill="#4a5561">${fmtDay(opts.from)}</text>
<text x="${W - PAD.r}" y="${H - 8}" text-anchor="end" font-size="12" fill="#4a5561">${fmtDay(opts.to)}</text>
${sorted.length === 0 ? html`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" font-size="13" fill="#4a5561">No score computed yet</text>` : ""}
</svg>`;
}

export interface DayBar {
  day: string;
  humanOrders: number;
  agentOrders: number;
}

/** Orders per day, agent checkouts stacked on human orders. */
export function activityChart(days: readonly DayBar[], label: string): Html {
  const iw = W - PAD.l - PAD.r;
  const ih = H - PAD.t - PAD.b;
  const max = Math.max(1, ...days.map((d) => d.humanOrders + d.agentOrders));
  const niceMax = max <= 5 ? max : Math.ceil(max / 5) * 5;
  const bw = iw / Math.max(1, days.length);
  const r = (n: number) => Math.round(n * 10) / 10;
  const y = (v: number) => PAD.t + ih - (v / niceMax) * ih;
  const ticks = [0, niceMax / 2, niceMax].map(
    (v) => html`<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${r(y(v))}" y2="${r(y(v))}" stroke="#d8dde3"/>
<text x="${PAD.l - 6}" y="${r(y(v)) + 4}" text-anchor="end" font-size="12" fill="#4a5561">${Number.isInteger(v) ? v : v.toFixed(1)}</text>`,
  );
  const bars = days.map((d, i) => {
    const x0 = r(PAD.l + i * bw + bw * 0.15);
    const w = r(Math.max(1, bw * 0.7));
    const hH = (d.humanOrders / niceMax) * ih;
    const hA = (d.agentOrders / niceMax) * ih;
    const tip = `${d.day}: ${d.humanOrders} human, ${d.agentOrders} agent`;
    return html`<g><title>${tip}</title>
<rect x="${x0}" y="${r(PAD.t + ih - hH)}" width="${w}" height="${r(hH)}" fill="#9fb3c8"/>
<rect x="${x0}" y="${r(PAD.t + ih - hH - hA)}" width="${w}" height="${r(hA)}" fill="#1f5fbf"/></g>`;
  });
  const totalH = days.reduce((s, d) => s + d.humanOrders, 0);
  const totalA = days.reduce((s, d) => s + d.agentOrders, 0);
  const summary = `${label}: ${totalH} human orders and ${totalA} agent checkouts over ${days.length} days`;
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${summary}" preserveAspectRatio="xMidYMid meet">
<title>${summary}</title>${ticks}${bars}
<text x="${PAD.l}" y="${H - 8}" font-size="12" fill="#4a5561">${days[0]?.day.slice(5) ?? ""}</text>
<text x="${W - PAD.r}" y="${H - 8}" text-anchor="end" font-size="12" fill="#4a5561">${days.at(-1)?.day.slice(5) ?? ""}</text>
<rect x="${W / 2 - 110}" y="${H - 19}" width="10" height="10" fill="#9fb3c8"/><text x="${W / 2 - 96}" y="${H - 10}" font-size="12" fill="#1d2630">human orders</text>
<rect x="${W / 2 + 4}" y="${H - 19}" width="10" height="10" fill="#1f5fbf"/><text x="${W / 2 + 18}" y="${H - 10}" font-size="12" fill="#1d2630">agent checkouts</text>
</svg>`;
}
