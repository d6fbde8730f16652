/**
 * The refunds page: requests waiting for a decision, and decided requests by status, each list paged
 * through the merchant read model (merchant-reads.ts `listRefundsPage`), so nothing past the newest few hundred is
 * out of reach (F2's note: the page read only the 500 newest requests).
 */
import type { RefundStatusFilter } from "../../../actors/store/merchant-reads.ts";
import type { RefundView } from "../../../actors/store/commerce.ts";
import type { StoreRecord } from "../../../actors/store/schemas.ts";
import { html, type Html } from "../html.ts";
import { badge, money, page, postForm, storeBase, when } from "../layout.ts";
import type { DashboardSession, Flash } from "../session.ts";

/**
 * The decided list's status filter (the filter of GET /merchant/stores/{slug}/refunds). One status at a time, refunded
 * by default: the paged read filters by one status, and "any" would list the waiting requests a second time.
 */
export const DECIDED_STATUSES: readonly RefundStatusFilter[] = ["REFUNDED", "REJECTED", "FAILED", "APPROVED"];
export const DEFAULT_DECIDED_STATUS: RefundStatusFilter = "REFUNDED";
/** The filter's value for every request, waiting ones included. */
export const ANY_STATUS = "any";

/** Query parameters of the two lists' pages (`page` is the waiting list's, as on every other dashboard list). */
export const REFUND_PAGE_PARAMS = { waiting: "page", history: "history_page" } as const;

export interface RefundsData {
  store: StoreRecord;
  pageSize: number;
  waiting: { page: number; total: number; items: RefundView[] };
  /** `status` undefined: every status (the filter's "any"). */
  history: { page: number; total: number; items: RefundView[]; status?: RefundStatusFilter };
  /** Failed refunds (an approval whose rail refund failed): they need a retry. */
  failedTotal: number;
}

function refundActions(session: DashboardSession, slug: string, r: RefundView, back: string): Html {
  if (r.status !== "PENDING_APPROVAL" && r.status !== "FAILED") return html``;
  const action = (decision: "approve" | "reject") => `${storeBase(slug)}/refunds/${r.refund_id}/${decision}`;
  const backField = html`<input type="hidden" name="back" value="${back}">`;
  return html`<div class="actions">
${postForm(action("approve"), session.csrfToken, html`${backField}<button type="submit" aria-label="Approve refund of ${money(r.amount_minor, r.currency)} for order ${r.order_id.slice(0, 8)}">${r.status === "FAILED" ? "Retry" : "Approve"}</button>`, { confirm: `Refund ${money(r.amount_minor, r.currency)} to the buyer?` })}
${postForm(action("reject"), session.csrfToken, html`${backField}<button type="submit" class="danger" aria-label="Reject refund of ${money(r.amount_minor, r.currency)} for order ${r.order_id.slice(0, 8)}">Reject</button>`, { confirm: "Reject this refund request?" })}
</div>`;
}

/** A table of refund requests; decision buttons on the rows that take one (waiting, failed). */
export function refundTable(session: DashboardSession, slug: string, refunds: readonly RefundView[], caption: string, back: string, withActions: boolean): Html {
  return html`<div class="table-wrap"><table class="stack"><caption>${caption}</caption><thead><tr><th>Requested</th><th>Order</th><th class="num">Amount</th><th>Reason</th><th>Status</th>${withActions ? html`<th>Decision</th>` : ""}</tr></thead><tbody>
${refunds.map(
  (r) => html`<tr data-refund="${r.refund_id}"><td data-label="Requested">${when(r.created_at)}</td><td data-label="Order"><a href="${storeBase(slug)}/orders/${r.order_id}">${r.order_id.slice(0, 8)}</a></td>
<td data-label="Amount" class="num">${money(r.amount_minor, r.currency)}</td><td data-label="Reason">${r.reason ?? "–"}</td><td data-label="Status">${badge(r.status)}</td>
${withActions ? html`<td data-label="Decision">${refundActions(session, slug, r, back)}</td>` : ""}</tr>`,
)}
${refunds.length === 0 ? html`<tr><td colspan="${withActions ? 6 : 5}">None.</td></tr>` : ""}
</tbody></table></div>`;
}

/**
 * Previous/next links of one list on a page that has two: layout.ts `pager` always moves `page`; here each list has
 * its own parameter and keeps the other list's page and the filter.
 */
function listPager(base: string, params: Record<string, string | undefined>, param: string, current: number, pageSize: number, total: number, label: string): Html {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const link = (p: number) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
    q.set(param, String(p));
    return `${base}?${q.toString()}`;
  };
  return html`<nav class="pager" aria-label="${label}">
${current > 1 ? html`<a href="${link(current - 1)}" rel="prev">Previous</a>` : ""}
<span>Page ${current} of ${pages} (${total} in all)</span>
${current < pages ? html`<a href="${link(current + 1)}" rel="next">Next</a>` : ""}</nav>`;
}

export function refundsPage(session: DashboardSession, d: RefundsData, flash: Flash | null): Html {
  const base = `${storeBase(d.store.slug)}/refunds`;
  const { waiting, history } = d;
  // Every parameter of the page, so each pager keeps the other list where it was.
  const state = {
    [REFUND_PAGE_PARAMS.waiting]: waiting.page > 1 ? String(waiting.page) : undefined,
    status: history.status === DEFAULT_DECIDED_STATUS ? undefined : (history.status ?? ANY_STATUS),
    [REFUND_PAGE_PARAMS.history]: history.page > 1 ? String(history.page) : undefined,
  };
  const failedLink = `${base}?status=FAILED#all-h`;
  return page({
    title: "Refunds",
    session,
    store: d.store,
    section: "refunds",
    flash,
    body: html`<h1>Refund requests</h1>
<section class="card" aria-labelledby="pending-h"><h2 id="pending-h">Waiting for a decision (${waiting.total})</h2>
<p class="hint">Approving refunds the buyer through the order's payment rail at once; rejecting closes the request.</p>
${d.failedTotal ? html`<p class="flash error" role="status"><a href="${failedLink}">${d.failedTotal} approved refund${d.failedTotal === 1 ? "" : "s"} failed at the payment rail: retry</a></p>` : ""}
${refundTable(session, d.store.slug, waiting.items, "Pending refund requests", base, true)}
${listPager(base, state, REFUND_PAGE_PARAMS.waiting, waiting.page, d.pageSize, waiting.total, "Pages of pending requests")}</section>
<section class="card" aria-labelledby="all-h"><h2 id="all-h">Decisions</h2>
<form method="get" action="${base}#all-h" class="row" aria-label="Filter refund requests">
${waiting.page > 1 ? html`<input type="hidden" name="${REFUND_PAGE_PARAMS.waiting}" value="${String(waiting.page)}">` : ""}
<div><label for="status">Status</label><select id="status" name="status">${DECIDED_STATUSES.map(
      (s) => html`<option value="${s}"${s === history.status ? html` selected` : ""}>${s.toLowerCase()}</option>`,
    )}<option value="${ANY_STATUS}"${history.status === undefined ? html` selected` : ""}>any status (waiting ones too)</option></select></div>
<div><button type="submit" class="secondary">Filter</button></div></form>
${refundTable(session, d.store.slug, history.items, "Refund requests, newest first", base, history.items.some((r) => r.status === "FAILED"))}
${listPager(base, state, REFUND_PAGE_PARAMS.history, history.page, d.pageSize, history.total, "Pages of decisions")}</section>`,
  });
}
