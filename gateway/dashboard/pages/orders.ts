/** Orders (list, detail with event history and its refund requests, status moves). The refunds page: ./refunds.ts. */
import { PARTLY_REFUNDED, type StoreOrderDetail, type StoreOrderRow } from "../../../actors/store/merchant-reads.ts";
import type { RefundView } from "../../../actors/store/commerce.ts";
import type { StoreRecord } from "../../../actors/store/schemas.ts";
import { html, type Html } from "../html.ts";
import { badge, money, page, pager, postForm, storeBase, when } from "../layout.ts";
import type { DashboardSession, Flash } from "../session.ts";
import { refundTable } from "./refunds.ts";

/** The status filter's values: the statuses, and `partly_refunded` (part of the capture refunded; no status says it: merchant-reads.ts). */
export const ORDER_STATUSES = ["pending", "paid", "fulfilled", "shipped", "delivered", "canceled", "refunded", PARTLY_REFUNDED] as const;
/** Moves a merchant may ask for (the order machine decides whether the move is legal from the current status). */
export const MERCHANT_MOVES = ["fulfilled", "shipped", "delivered", "canceled"] as const;

export interface OrdersData {
  store: StoreRecord;
  orders: { total: number; items: StoreOrderRow[] };
  status?: string;
  channel?: "agent" | "human";
  page: number;
  pageSize: number;
  pendingRefunds: number;
}

export function ordersPage(session: DashboardSession, d: OrdersData, flash: Flash | null): Html {
  const base = `${storeBase(d.store.slug)}/orders`;
  return page({
    title: "Orders",
    session,
    store: d.store,
    section: "orders",
    flash,
    body: html`<h1>Orders</h1>
${d.pendingRefunds ? html`<p class="flash ok" role="status"><a href="${storeBase(d.store.slug)}/refunds">${d.pendingRefunds} refund request${d.pendingRefunds === 1 ? "" : "s"} waiting for your decision</a></p>` : ""}
<section class="card" aria-labelledby="ol-h"><h2 id="ol-h" class="visually-hidden">Order list</h2>
<form method="get" action="${base}" class="row" aria-label="Filter orders">
<div><label for="status">Status</label><select id="status" name="status"><option value="">Any status</option>${ORDER_STATUSES.map(
      (s) => html`<option value="${s}"${s === d.status ? html` selected` : ""}>${s.replace(/_/g, " ")}</option>`,
    )}</select></div>
<div><label for="channel">Channel</label><select id="channel" name="channel"><option value="">Agents and humans</option>
<option value="agent"${d.channel === "agent" ? html` selected` : ""}>Agent checkouts</option><option value="human"${d.channel === "human" ? html` selected` : ""}>Human orders</option></select></div>
<div><button type="submit" class="secondary">Filter</button></div></form>
<div class="table-wrap"><table class="stack"><thead><tr><th>Order</th><th>Placed</th><th>Channel</th><th>Status</th><th class="num">Total</th><th class="num">Refunded</th><th>Rail</th></tr></thead><tbody>
${d.orders.items.map(
  (o) => html`<tr><td data-label="Order"><a href="${base}/${o.id}">${o.id.slice(0, 8)}</a></td><td data-label="Placed">${when(o.createdAt)}</td>
<td data-label="Channel">${o.channel}</td><td data-label="Status">${badge(o.status)}</td><td data-label="Total" class="num">${money(o.totalMinor, o.currency)}</td>
<td data-label="Refunded" class="num">${o.refundedMinor ? money(o.refundedMinor, o.currency) : "–"}</td><td data-label="Rail">${o.paymentRail}</td></tr>`,
)}
${d.orders.items.length === 0 ? html`<tr><td colspan="7">No orders match.</td></tr>` : ""}
</tbody></table></div>
${pager(base, { status: d.status, channel: d.channel }, d.page, d.pageSize, d.orders.total)}
</section>`,
  });
}

/** "by Express to US 94107" from a created event's shipping record (docs/checkout.md "Shipping"), or null. */
function shippingOf(v: unknown): string | null {
  if (!v || typeof v !== "object") return null;
  const s = v as { name?: unknown; countryCode?: unknown; postalCode?: unknown };
  const by = typeof s.name === "string" ? `by ${s.name}` : "";
  const to = typeof s.countryCode === "string" ? `to ${s.countryCode}${typeof s.postalCode === "string" ? ` ${s.postalCode}` : ""}` : "";
  return by || to ? [by, to].filter(Boolean).join(" ") : null;
}

export function orderDetailPage(session: DashboardSession, store: StoreRecord, o: StoreOrderDetail, flash: Flash | null): Html {
  const base = storeBase(store.slug);
  const back = `${base}/orders/${o.id}`;
  const describe = (e: StoreOrderDetail["events"][number]) => {
    const move = e.fromStatus || e.toStatus ? html` ${e.fromStatus ? badge(e.fromStatus) : ""}→ ${e.toStatus ? badge(e.toStatus) : ""}` : "";
    const who = typeof e.data.actor === "string" ? html` <span class="muted">by ${e.data.actor}</span>` : "";
    const note = typeof e.data.note === "string" && e.data.note ? html` <span class="muted">“${e.data.note}”</span>` : "";
    const ship = shippingOf(e.data.shipping);
    return html`<li><time datetime="${e.at}">${when(e.at)}</time>: <strong>${e.type.replace(/_/g, " ")}</strong>${move}${who}${note}${ship ? html` <span class="muted">ships ${ship}</span>` : ""}</li>`;
  };
  return page({
    title: `Order ${o.id.slice(0, 8)}`,
    session,
    store,
    section: "orders",
    flash,
    body: html`<p><a href="${base}/orders">← All orders</a></p>
<h1>Order <code>${o.id}</code></h1>
<section class="card" aria-labelledby="sum-h"><h2 id="sum-h">Summary</h2>
<dl class="stats"><div><dt>Status</dt><dd>${badge(o.status)}</dd></div><div><dt>Total</dt><dd>${money(o.totalMinor, o.currency)}</dd></div>
<div><dt>Refunded</dt><dd>${money(o.refundedMinor, o.currency)}</dd></div><div><dt>Channel</dt><dd>${o.channel}</dd></div>
<div><dt>Payment rail</dt><dd>${o.paymentRail}</dd></div><div><dt>Placed</dt><dd>${when(o.createdAt)}</dd></div></dl>
${o.agentKeyId ? html`<p class="muted">Agent key id <code>${o.agentKeyId}</code></p>` : ""}
</section>
<div class="grid">
<section class="card" aria-labelledby="items-h"><h2 id="items-h">Items</h2>
<div class="table-wrap"><table><thead><tr><th>Item</th><th class="num">Qty</th><th class="num">Unit price</th></tr></thead><tbody>
${o.items.map((i) => html`<tr><td>${i.title}</td><td class="num">${i.quantity}</td><td class="num">${money(i.unitPriceMinor, o.currency)}</td></tr>`)}
</tbody></table></div></section>
<section class="card" aria-labelledby="move-h"><h2 id="move-h">Update status</h2>
${postForm(`${base}/orders/${o.id}/status`, session.csrfToken, html`<label for="to">New status</label>
<select id="to" name="status">${MERCHANT_MOVES.map((m) => html`<option value="${m}">${m}</option>`)}</select>
<label for="note">Note (optional)</label><input id="note" type="text" name="note" maxlength="500">
<p><button type="submit">Update</button></p>`, { label: "Update order status" })}
<p class="hint">Illegal moves (for example shipping a canceled order) are refused.</p></section>
</div>
<section class="card" aria-labelledby="ref-h"><h2 id="ref-h">Refund requests</h2>
${refundTable(session, store.slug, o.refunds, "Refund requests of this order", back, true)}</section>
<section class="card" aria-labelledby="ev-h"><h2 id="ev-h">History</h2><ol class="history">${o.events.map(describe)}</ol></section>`,
  });
}
