/** Overview: store status, trust score (band, operational status), score history, explanation, order activity. */
import type { CatalogQuality, DayActivity } from "../../../actors/store/merchant-reads.ts";
import type { StoreRecord } from "../../../actors/store/schemas.ts";
import type { TrustExplanation } from "../../../actors/trust/explain.ts";
import { activityChart, scoreChart, type ScorePoint } from "../charts.ts";
import { html, type Html } from "../html.ts";
import { ago, badge, page, storeBase } from "../layout.ts";
import type { DashboardSession, Flash } from "../session.ts";

export interface OverviewData {
  store: StoreRecord;
  trust: {
    score0to100: number;
    score0to1: number;
    band: string;
    operationalStatus: string;
    confidence: string;
    engine: string;
    agentCheckoutAllowed: boolean;
    computedAt: string;
  } | null;
  trustError: string | null;
  history: ScorePoint[];
  historyFrom: number;
  explanation: TrustExplanation | null;
  activity: DayActivity[];
  quality: CatalogQuality;
  pendingRefunds: number;
  now: number;
}

const pct = (v: number) => `${Math.round(v * 100)} %`;

/** "merchantReliabilityBase.disputeRefundHealth" → "Dispute refund health" (v2 names like "dispute_rate" too). */
export function factorLabel(name: string): string {
  const leaf = name.split(".").pop() ?? name;
  const words = leaf.replace(/_/g, " ").replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase().trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function overviewPage(session: DashboardSession, d: OverviewData, flash: Flash | null): Html {
  const s = d.store;
  const t = d.trust;
  const base = storeBase(s.slug);
  const factor = (f: { name: string; value: number; weight: number }) =>
    html`<li><strong>${factorLabel(f.name)}</strong>: ${pct(f.value)} <span class="muted">(weight ${pct(f.weight)})</span></li>`;
  const ex = d.explanation;
  const agentOrders = d.activity.reduce((n, x) => n + x.agentOrders, 0);
  const humanOrders = d.activity.reduce((n, x) => n + x.humanOrders, 0);
  return page({
    title: "Overview",
    session,
    store: s,
    section: "overview",
    flash,
    body: html`<h1>${s.name}</h1>
<section aria-labelledby="status-h" class="card"><h2 id="status-h">Store status</h2>
<dl class="stats">
<div><dt>Operational status</dt><dd>${badge(t?.operationalStatus ?? s.operationalStatus)}</dd></div>
<div><dt>Verification</dt><dd>${s.verificationLevel}</dd></div>
<div><dt>Last catalog sync</dt><dd>${ago(s.lastSyncAt, d.now)}</dd></div>
<div><dt>Active products</dt><dd>${d.quality.active}</dd></div>
<div><dt>Pending refunds</dt><dd>${d.pendingRefunds > 0 ? html`<a href="${base}/refunds">${d.pendingRefunds}</a>` : "0"}</dd></div>
<div><dt>Agent checkout</dt><dd>${t ? (t.agentCheckoutAllowed ? badge("allowed", "ok") : badge("not allowed", "bad")) : "–"}</dd></div>
</dl></section>
<div class="grid">
<section aria-labelledby="trust-h" class="card"><h2 id="trust-h">Trust score</h2>
${t
  ? html`<p><span class="big">${t.score0to100.toFixed(0)}</span><span class="muted"> / 100</span></p>
<p>Band ${badge(t.band)} · status ${badge(t.operationalStatus)}</p>
<p class="muted">Confidence ${t.confidence.replace(/_/g, " ")} · engine ${t.engine} · computed ${ago(t.computedAt, d.now)}</p>`
  : html`<p>No trust score yet. ${d.trustError ?? ""}</p>`}
</section>
<section aria-labelledby="explain-h" class="card"><h2 id="explain-h">Why this score</h2>
${ex
  ? html`<p>${ex.recommendation}</p>
<p>Trend over 30 days: ${badge(ex.trend, ex.trend === "declining" ? "warn" : ex.trend === "improving" ? "ok" : "")}${ex.trendDelta0to1 !== null ? html` <span class="muted">(${ex.trendDelta0to1 >= 0 ? "+" : ""}${ex.trendDelta0to1.toFixed(3)})</span>` : ""}</p>
<h3>Strengths</h3>${ex.strengths.length ? html`<ul>${ex.strengths.map(factor)}</ul>` : html`<p class="muted">None stand out yet.</p>`}
<h3>Weaknesses</h3>${ex.weaknesses.length ? html`<ul>${ex.weaknesses.map(factor)}</ul>` : html`<p class="muted">None.</p>`}`
  : html`<p class="muted">Available once the store has a score.</p>`}
</section></div>
<section aria-labelledby="hist-h" class="card"><h2 id="hist-h">Trust score history (90 days)</h2>
${scoreChart(d.history, { from: d.historyFrom, to: d.now, label: "Trust score history" })}
<p class="hint">Scores are recomputed every 6 hours and after order activity. Dashed lines: agent checkout threshold (0.70) and discoverability (0.30).</p>
</section>
<section aria-labelledby="act-h" class="card"><h2 id="act-h">Orders and agent checkouts (30 days)</h2>
${activityChart(d.activity, "Orders per day")}
<p>${humanOrders} human orders and ${agentOrders} agent checkouts in 30 days. <a href="${base}/orders">All orders</a></p>
</section>
<section aria-labelledby="q-h" class="card"><h2 id="q-h">Catalog health</h2>
<p>Freshness ${badge(d.quality.freshness)} · ${d.quality.missingGtin} without GTIN · ${d.quality.missingImages} without images · ${d.quality.stale} stale${d.quality.missingPolicies.length ? html` · missing policies: ${d.quality.missingPolicies.join(", ")}` : ""}.</p>
<p><a href="${base}/catalog">Open the catalog</a></p>
</section>`,
  });
}
