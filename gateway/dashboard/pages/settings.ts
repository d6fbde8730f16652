/**
 * Settings: policies, negotiation rules, enabled MCP tools, payment rails, agent allowlist, coupons; and
 * settings → webhooks: endpoints (add, delete, rotate secret, enable or disable), recent deliveries, redeliver.
 */
import type { AllowlistEntry, AllowlistStatusFilter, StoreCoupon } from "../../../actors/store/merchant-reads.ts";
import { currencyExponent, toMajor, type StoreRecord } from "../../../actors/store/schemas.ts";
import { PAYMENT_RAILS } from "../../../actors/store/settings.ts";
import { WEBHOOK_EVENT_KINDS } from "../../../actors/webhook/messages.ts";
import type { WebhookDeliveryView, WebhookEndpointView } from "../../rest/webhooks.ts";
import { html, type Html } from "../html.ts";
import { badge, money, page, postForm, storeBase, when } from "../layout.ts";
import type { DashboardSession, Flash } from "../session.ts";

export interface ToolInfo {
  name: string;
  title: string;
  group: string;
}

export interface SettingsData {
  store: StoreRecord;
  tools: readonly ToolInfo[];
  /** One page of the agent allowlist (audit M-1: the whole list was rendered, 20,000 keys made a 12 MB page). */
  allowlist: AllowlistPage;
  coupons: readonly StoreCoupon[];
  /** The shipping promises agents are shown (the zones': `agentPolicies`), beside the stored ones the form edits. */
  agentShipping?: { freeShippingThresholdMinor?: number; shippingEstimateDays?: string };
  /** The policies form as it was posted, shown again when the change was refused (the merchant's edits are kept). */
  postedPolicies?: PostedPolicies;
}

/** A page of the allowlist as the settings page shows it: `total` counts every binding matching `status`. */
export interface AllowlistPage {
  items: readonly AllowlistEntry[];
  total: number;
  /** 1-based. */
  page: number;
  pageSize: number;
  status?: AllowlistStatusFilter;
}

/**
 * The settings page's own query parameters for its allowlist list (audit M-1): named apart from `page` so that they
 * say which list of the page they move, as the refunds page's two lists do.
 */
export const ALLOWLIST_PARAMS = { page: "allowlist_page", status: "allowlist_status" } as const;
/** Bindings per page of the settings page's allowlist (the dashboard's lists show 50, as the REST default). */
export const ALLOWLIST_PAGE_SIZE = 50;
/** The furthest page a link may ask for (the dashboard's `pageParam` bound): offset at most 500,000 rows. */
const ALLOWLIST_MAX_PAGE = 10_000;

/** Which allowlist page a settings request asks for. */
export type AllowlistQuery = { page: number; status?: AllowlistStatusFilter };

/** The allowlist page and status filter a settings request asks for; anything else is page 1, every status. */
export function allowlistQuery(query: Record<string, string | undefined>): AllowlistQuery {
  const page = Math.max(1, Math.min(ALLOWLIST_MAX_PAGE, Number.parseInt(query[ALLOWLIST_PARAMS.page] ?? "1", 10) || 1));
  const status = query[ALLOWLIST_PARAMS.status];
  return status === "allowed" || status === "blocked" ? { page, status } : { page };
}

/** Filter and previous/next links of the allowlist; each keeps the other parameter and returns to the list (#allow). */
function allowlistNav(base: string, a: AllowlistPage): Html {
  const link = (page: number, status: AllowlistStatusFilter | undefined) => {
    const q = new URLSearchParams();
    if (status) q.set(ALLOWLIST_PARAMS.status, status);
    if (page > 1) q.set(ALLOWLIST_PARAMS.page, String(page));
    const qs = q.toString();
    return `${base}${qs ? `?${qs}` : ""}#allow`;
  };
  const pages = Math.max(1, Math.ceil(a.total / a.pageSize));
  const filter = (label: string, status: AllowlistStatusFilter | undefined) =>
    a.status === status ? html`<strong aria-current="true">${label}</strong>` : html`<a href="${link(1, status)}">${label}</a>`;
  return html`<p class="pager">Show: ${filter("All", undefined)} ${filter("Allowed", "allowed")} ${filter("Blocked", "blocked")}</p>
<nav class="pager" aria-label="Allowlist pages">
${a.page > 1 ? html`<a href="${link(Math.min(a.page - 1, pages), a.status)}" rel="prev">Previous</a>` : ""}
<span>Page ${a.page} of ${pages} (${a.total} in all)</span>
${a.page < pages ? html`<a href="${link(a.page + 1, a.status)}" rel="next">Next</a>` : ""}</nav>`;
}

/** The policies form's fields as posted (text as typed). */
export interface PostedPolicies {
  acceptsReturns: boolean;
  returnWindowDays: string;
  freeShippingThreshold: string;
  restockingFeePercent: string;
  shippingEstimateDays: string;
  supportResponseTimeSla: string;
}

/**
 * The precision rule of the number inputs (audit X-F2): a browser refuses to submit a value that is not a multiple
 * of the input's step, and REST stores percents at any precision and money to the currency's minor unit, so the
 * forms could not be saved after a REST write of 12.25 % (step was 0.1) or of 1.125 KWD (step was 0.01). Percents
 * take any precision (`PERCENT_STEP`; the server checks the range), money one minor unit of the store's currency.
 */
const PERCENT_STEP = "any";
export function moneyStep(currency: string): string {
  const e = currencyExponent(currency);
  return e === 0 ? "1" : (10 ** -e).toFixed(e);
}

/** "free from 60.00 USD, 3-5 days" as agents read it now; "no free shipping", "no estimate" when absent. */
export function agentShippingText(a: NonNullable<SettingsData["agentShipping"]>, currency: string): string {
  const free =
    a.freeShippingThresholdMinor === undefined ? "no free shipping" : a.freeShippingThresholdMinor === 0 ? "free shipping" : `free shipping from ${money(a.freeShippingThresholdMinor, currency)}`;
  return `${free}, ${a.shippingEstimateDays === undefined ? "no delivery estimate" : `${a.shippingEstimateDays} days`}`;
}

const RAIL_TEXT: Record<string, string> = {
  card: "Card (sandbox processor tokens)",
  x402: "x402 (USDC over HTTP 402)",
  MOCK: "MOCK (simulated, demo store only)",
};

const checked = (on: boolean) => (on ? html` checked` : "");
const num = (v: number | undefined | null) => (v === undefined || v === null ? "" : String(v));

export function settingsPage(session: DashboardSession, d: SettingsData, flash: Flash | null, now: number): Html {
  const s = d.store;
  const base = `${storeBase(s.slug)}/settings`;
  const csrf = session.csrfToken;
  const p = s.policies;
  const n = s.negotiationRules;
  const all = s.enabledMcpTools === null;
  const enabled = new Set(s.enabledMcpTools ?? []);
  const groups = [...new Set(d.tools.map((t) => t.group))];
  const step = moneyStep(s.currency);
  const threshold = p.freeShippingThresholdMinor === undefined ? "" : String(toMajor(p.freeShippingThresholdMinor, s.currency));
  // the values the policies form shows: as posted after a refusal, else as stored
  const pf: PostedPolicies = d.postedPolicies ?? {
    acceptsReturns: p.acceptsReturns,
    returnWindowDays: num(p.returnWindowDays),
    freeShippingThreshold: threshold,
    restockingFeePercent: num(p.restockingFeePercent),
    shippingEstimateDays: p.shippingEstimateDays ?? "",
    supportResponseTimeSla: p.supportResponseTimeSla ?? "",
  };
  return page({
    title: "Settings",
    session,
    store: s,
    section: "settings",
    flash,
    body: html`<h1>Settings</h1>
<p>Webhooks are under <a href="${base}/webhooks">Settings → Webhooks</a>.</p>
<section class="card" aria-labelledby="policies"><h2 id="policies">Policies</h2>
${postForm(`${base}/policies`, csrf, html`<label class="inline"><input type="checkbox" name="acceptsReturns" value="1"${checked(pf.acceptsReturns)}> Accepts returns</label>
<div class="row">
<div><label for="rw">Return window (days)</label><input id="rw" type="number" name="returnWindowDays" min="0" max="3650" value="${pf.returnWindowDays}"></div>
<div><label for="fst">Free shipping from (${s.currency})</label><input id="fst" type="number" name="freeShippingThreshold" min="0" step="${step}" value="${pf.freeShippingThreshold}"></div>
<div><label for="rf">Restocking fee (%)</label><input id="rf" type="number" name="restockingFeePercent" min="0" max="100" step="${PERCENT_STEP}" value="${pf.restockingFeePercent}"></div>
</div><div class="row">
<div><label for="sed">Shipping estimate (days)</label><input id="sed" type="text" name="shippingEstimateDays" maxlength="50" placeholder="3-5" value="${pf.shippingEstimateDays}"></div>
<div><label for="sla">Support response time</label><input id="sla" type="text" name="supportResponseTimeSla" maxlength="50" placeholder="24h" value="${pf.supportResponseTimeSla}"></div>
</div><p class="hint">Agents are shown what carts charge: with a shipping zone for your own country, its free-shipping amount and delivery days instead of these two; with no zones at all, free shipping.${d.agentShipping ? html` Agents now read: <strong data-agent-shipping>${agentShippingText(d.agentShipping, s.currency)}</strong>.` : ""}</p>
<p><button type="submit">Save policies</button></p>`, { label: "Policies" })}
</section>
<section class="card" aria-labelledby="negotiation"><h2 id="negotiation">Negotiation rules (beta)</h2>
${postForm(`${base}/negotiation`, csrf, html`<label class="inline"><input type="checkbox" name="enabled" value="1"${checked(!!n?.enabled)}> Agents may negotiate prices</label>
<div class="row">
<div><label for="floor">Floor (% of list price)</label><input id="floor" type="number" name="floorPercent" min="0" max="100" step="${PERCENT_STEP}" value="${num(n?.floorPercent ?? 80)}"></div>
<div><label for="auto">Auto-accept from (% of list price)</label><input id="auto" type="number" name="autoAcceptPercent" min="0" max="100" step="${PERCENT_STEP}" value="${num(n?.autoAcceptPercent ?? 95)}"></div>
<div><label for="rounds">Max rounds</label><input id="rounds" type="number" name="maxRounds" min="1" max="100" value="${num(n?.maxRounds ?? 3)}"></div>
</div><label for="excl">Excluded categories (one per line)</label><textarea id="excl" name="excludedCategories" rows="3">${(n?.excludedCategories ?? []).join("\n")}</textarea>
<p><button type="submit">Save negotiation rules</button></p>`, { label: "Negotiation rules" })}
</section>
<section class="card" aria-labelledby="mcp"><h2 id="mcp">MCP tools</h2>
${postForm(`${base}/mcp-tools`, csrf, html`<fieldset><legend>Which tools your store's MCP endpoint serves</legend>
<label><input type="radio" name="mode" value="all"${checked(all)}> All tools, including ones added later</label>
<label><input type="radio" name="mode" value="selected"${checked(!all)}> Only the tools selected below</label></fieldset>
${groups.map(
  (g) => html`<fieldset class="tools"><legend>${g}</legend>${d.tools
    .filter((t) => t.group === g)
    .map((t) => html`<label><input type="checkbox" name="tools" value="${t.name}"${checked(all || enabled.has(t.name))}> <code>${t.name}</code> <span class="muted">${t.title}</span></label>`)}</fieldset>`,
)}
<p><button type="submit">Save MCP tools</button></p>`, { label: "MCP tools" })}
</section>
<section class="card" aria-labelledby="rails"><h2 id="rails">Payment rails</h2>
${postForm(`${base}/payment-methods`, csrf, html`<fieldset><legend>Rails agents may pay with</legend>
${PAYMENT_RAILS.map((r) => {
  const on = s.paymentMethods.includes(r);
  const locked = r === "MOCK" && !on;
  return html`<label><input type="checkbox" name="methods" value="${r}"${checked(on)}${locked ? html` disabled` : ""}> ${RAIL_TEXT[r] ?? r}</label>`;
})}</fieldset><p><button type="submit">Save payment rails</button></p>`, { label: "Payment rails" })}
</section>
<section class="card" aria-labelledby="allow"><h2 id="allow">Agent allowlist</h2>
<p class="hint">An agent key is bound to your store by its first order; a blocked key can no longer request refunds here. Newest first.</p>
${allowlistNav(base, d.allowlist)}
<div class="table-wrap"><table class="stack"><thead><tr><th>Agent key id</th><th>Status</th><th>Since</th><th>Action</th></tr></thead><tbody>
${d.allowlist.items.map(
  (a) => html`<tr><td data-label="Key"><code>${a.key_id}</code></td><td data-label="Status">${badge(a.status)}</td><td data-label="Since">${when(a.created_at)}</td>
<td data-label="Action">${postForm(`${base}/allowlist/${a.key_id}`, csrf, a.status === "allowed"
    ? html`<input type="hidden" name="status" value="blocked"><button type="submit" class="danger" aria-label="Block key ${a.key_id}">Block</button>`
    : html`<input type="hidden" name="status" value="allowed"><button type="submit" class="secondary" aria-label="Allow key ${a.key_id}">Allow</button>`)}</td></tr>`,
)}
${d.allowlist.items.length === 0 ? html`<tr><td colspan="4">${d.allowlist.total > 0 ? "No key on this page." : d.allowlist.status ? `No ${d.allowlist.status} key.` : "No agent has ordered yet."}</td></tr>` : ""}
</tbody></table></div></section>
<section class="card" aria-labelledby="coupons"><h2 id="coupons">Coupons</h2>
<div class="table-wrap"><table class="stack"><thead><tr><th>Code</th><th>Discount</th><th>Minimum</th><th>Expires</th><th>Used</th><th>Status</th><th>Action</th></tr></thead><tbody>
${d.coupons.map(
  (c) => html`<tr><td data-label="Code"><code>${c.code}</code></td><td data-label="Discount">${c.kind === "percent" ? `${c.value} %` : money(c.value, c.currency ?? s.currency)}</td>
<td data-label="Minimum">${c.minSpendMinor ? money(c.minSpendMinor, s.currency) : "–"}</td><td data-label="Expires">${c.expiresAt ? when(c.expiresAt) : "never"}</td>
<td data-label="Used">${c.usedCount}${c.usageLimit !== null ? ` of ${c.usageLimit}` : ""}</td><td data-label="Status">${badge(c.active ? "active" : "inactive")}${c.expiresAt && new Date(c.expiresAt).getTime() <= now ? badge("expired", "warn") : ""}${c.usageLimit !== null && c.usedCount >= c.usageLimit ? badge("used up", "warn") : ""}</td>
<td data-label="Action">${postForm(`${base}/coupons/${c.code}/active`, csrf, c.active
    ? html`<input type="hidden" name="active" value="0"><button type="submit" class="danger" aria-label="Deactivate ${c.code}">Deactivate</button>`
    : html`<input type="hidden" name="active" value="1"><button type="submit" class="secondary" aria-label="Activate ${c.code}">Activate</button>`)}</td></tr>`,
)}
${d.coupons.length === 0 ? html`<tr><td colspan="7">No coupons.</td></tr>` : ""}
</tbody></table></div>
<h3>Add or replace a coupon</h3>
${postForm(`${base}/coupons`, csrf, html`<div class="row">
<div><label for="code">Code</label><input id="code" type="text" name="code" required pattern="[A-Za-z0-9_\\-]{2,64}" maxlength="64"></div>
<div><label for="kind">Kind</label><select id="kind" name="kind"><option value="percent">Percent off</option><option value="fixed">Fixed amount off (${s.currency})</option></select></div>
<div><label for="value">Value</label><input id="value" type="number" name="value" min="${step}" step="${step}" required></div>
</div><div class="row">
<div><label for="min">Minimum spend (${s.currency})</label><input id="min" type="number" name="minSpend" min="0" step="${step}"></div>
<div><label for="exp">Expires (UTC, optional)</label><input id="exp" type="datetime-local" name="expiresAt"></div>
<div><label for="limit">Usage limit (optional)</label><input id="limit" type="number" name="usageLimit" min="0"></div>
</div><p><button type="submit">Save coupon</button></p>`, { label: "Add coupon" })}
</section>`,
  });
}

export interface WebhooksData {
  store: StoreRecord;
  endpoints: readonly (WebhookEndpointView & { deliveries: readonly WebhookDeliveryView[] })[];
  /** Shown once, right after adding an endpoint or rotating its secret. */
  newSecret?: { endpointId: string; url: string; secret: string; rotated: boolean };
  formUrl?: string;
}

export function webhooksPage(session: DashboardSession, d: WebhooksData, flash: Flash | null): Html {
  const s = d.store;
  const base = `${storeBase(s.slug)}/settings/webhooks`;
  const csrf = session.csrfToken;
  const ns = d.newSecret;
  return page({
    title: "Webhooks",
    session,
    store: s,
    section: "webhooks",
    flash,
    body: html`<p><a href="${storeBase(s.slug)}/settings">← Settings</a></p><h1>Settings → Webhooks</h1>
${ns
  ? html`<section class="secret" role="alert" aria-labelledby="secret-h"><h2 id="secret-h">${ns.rotated ? "New signing secret" : "Endpoint added"}: copy the secret now</h2>
<p>This signing secret for <strong>${ns.url}</strong> is shown <strong>only once</strong>. Store it where your receiver can read it; we keep it encrypted and cannot show it again.</p>
<code id="new-secret">${ns.secret}</code>
<button type="button" class="secondary" data-copy="new-secret" hidden>Copy secret</button>
${ns.rotated ? html`<p class="hint">The previous secret keeps signing alongside for 24 hours, until the next rotation (a rotation ends any earlier overlap).</p>` : ""}</section>`
  : ""}
<section class="card" aria-labelledby="add-h"><h2 id="add-h">Add an endpoint</h2>
${postForm(base, csrf, html`<label for="url">URL</label><input id="url" type="url" name="url" required maxlength="2048" placeholder="https://example.com/webhooks" value="${d.formUrl ?? ""}">
<fieldset><legend>Events</legend>${WEBHOOK_EVENT_KINDS.map((k) => html`<label><input type="checkbox" name="events" value="${k}" checked> <code>${k}</code></label>`)}</fieldset>
<p><button type="submit">Add endpoint</button></p>`, { label: "Add webhook endpoint" })}
<p class="hint">Deliveries are signed (<code>X-Webhook-Signature</code>, Stripe-compatible) and retried for up to 72 hours. An endpoint with no successful answer for 5 days is disabled until you enable it again.</p>
</section>
${d.endpoints.length === 0 ? html`<p>No endpoints yet.</p>` : ""}
${d.endpoints.map(
  (e) => html`<section class="card" aria-labelledby="ep-${e.id}"><h2 id="ep-${e.id}"><span class="visually-hidden">Endpoint </span>${e.url}</h2>
<p>${e.enabled ? "" : html`${badge("disabled", "bad")} · `}${e.events.map((k) => badge(k, ""))} · breaker ${badge(e.breaker)} · added ${when(e.createdAt)}${e.previousSecretExpiresAt ? html` · previous secret valid until ${when(e.previousSecretExpiresAt)}` : ""}${e.enabled && e.failingSince ? html` · failing since ${when(e.failingSince)}` : ""}</p>
${e.enabled
  ? ""
  : html`<p role="status">Disabled ${when(e.disabledAt)}: ${e.disabledReason ?? ""} No deliveries are made for new events until you enable it; events in between are not sent later. Redeliver its deliveries after enabling it.</p>`}
<div class="actions">
${e.enabled
  ? postForm(`${base}/${e.id}/disable`, csrf, html`<button type="submit" class="secondary">Disable endpoint</button>`, { confirm: "Disable this endpoint? Pending deliveries are dead-lettered and new events are not sent to it until you enable it." })
  : postForm(`${base}/${e.id}/enable`, csrf, html`<button type="submit">Enable endpoint</button>`)}
${postForm(`${base}/${e.id}/rotate`, csrf, html`<button type="submit" class="secondary">Rotate secret</button>`, { confirm: "Create a new signing secret? The current one keeps working for 24 hours; any older one stops now." })}
${postForm(`${base}/${e.id}/delete`, csrf, html`<button type="submit" class="danger">Delete endpoint</button>`, { confirm: "Delete this endpoint? Pending deliveries are dropped." })}
</div>
<div class="table-wrap"><table class="stack"><caption>Recent deliveries</caption><thead><tr><th>Created</th><th>Event</th><th>Status</th><th class="num">Attempts</th><th>Last result</th><th>Action</th></tr></thead><tbody>
${e.deliveries.map(
  (x) => html`<tr><td data-label="Created">${when(x.createdAt)}</td><td data-label="Event"><code>${x.event}</code></td><td data-label="Status">${badge(x.status)}</td>
<td data-label="Attempts" class="num">${x.attempts}</td><td data-label="Last result">${x.lastStatusCode !== null ? `HTTP ${x.lastStatusCode}` : ""}${x.lastError ? html` <span class="muted">${x.lastError}</span>` : ""}${x.deliveredAt ? ` delivered ${when(x.deliveredAt)}` : ""}</td>
<td data-label="Action">${postForm(`${base}/${e.id}/deliveries/${x.id}/redeliver`, csrf, html`<button type="submit" class="secondary" aria-label="Redeliver ${x.event} from ${when(x.createdAt)}">Redeliver</button>`)}</td></tr>`,
)}
${e.deliveries.length === 0 ? html`<tr><td colspan="6">No deliveries yet.</td></tr>` : ""}
</tbody></table></div></section>`,
)}`,
  });
}
