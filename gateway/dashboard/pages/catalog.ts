/** Catalog: quality summary, products with their flags, last sync, JSONL upload (same ingestion as PUT /catalog). */
import { CATALOG_FLAGS, type CatalogFlag, type CatalogProductRow, type CatalogQuality } from "../../../actors/store/merchant-reads.ts";
import type { StoreRecord } from "../../../actors/store/schemas.ts";
import { html, type Html } from "../html.ts";
import { ago, badge, money, page, pager, postForm, storeBase, when } from "../layout.ts";
import type { DashboardSession, Flash } from "../session.ts";

/**
 * Lines per JSONL upload (blank ones included), refused whole above it: the request waits for every batch, so a
 * browser form stays a job of a minute or so; larger catalogs go through the CLI import, which streams the file
 * from disk (audit X-F1: 10 million junk lines took 3.5 GB and held every other request for 34 s).
 */
export const MAX_UPLOAD_LINES = 100_000;
/** The upload's answer lists this many rejected lines (the lowest line numbers) and counts the others. */
export const SHOWN_REJECTIONS = 100;

export interface UploadOutcome {
  fileName: string;
  lines: number;
  accepted: number;
  removed: number;
  /** Every rejected line. */
  rejectedCount: number;
  /** The first rejected lines (the lowest numbers, at most `SHOWN_REJECTIONS`), in line order. */
  rejected: { line: number; externalId: string | null; errors: string[] }[];
}

export interface CatalogData {
  store: StoreRecord;
  quality: CatalogQuality;
  products: { total: number; items: CatalogProductRow[] };
  flag?: CatalogFlag;
  page: number;
  pageSize: number;
  upload?: UploadOutcome;
  now: number;
}

/** A limit as the page says it: 100,000. */
const count = (n: number): string => n.toLocaleString("en-US");

const FLAG_LABEL: Record<CatalogFlag, string> = {
  missing_gtin: "Missing GTIN",
  missing_images: "Missing images",
  stale: "Stale (no sync for 7 days)",
  out_of_stock: "Out of stock",
  inactive: "Inactive",
};

export function catalogPage(session: DashboardSession, d: CatalogData, flash: Flash | null): Html {
  const s = d.store;
  const q = d.quality;
  const base = `${storeBase(s.slug)}/catalog`;
  const filterLink = (flag: CatalogFlag | undefined, label: string, count: number) =>
    html`<div><dt>${label}</dt><dd><a href="${flag ? `${base}?flag=${flag}` : base}"${flag === d.flag ? html` aria-current="true"` : ""}>${count}</a></dd></div>`;
  const up = d.upload;
  return page({
    title: "Catalog",
    session,
    store: s,
    section: "catalog",
    flash,
    body: html`<h1>Catalog</h1>
${up
  ? html`<section class="card" aria-labelledby="up-h" id="upload-result"><h2 id="up-h">Upload of ${up.fileName}</h2>
<p role="status">${up.lines} lines read: <strong>${up.accepted} accepted</strong>, <strong>${up.rejectedCount} rejected</strong>${up.removed ? `, ${up.removed} removed` : ""}${up.rejectedCount > up.rejected.length ? ` (first ${up.rejected.length} shown)` : ""}.</p>
${up.rejected.length
  ? html`<div class="table-wrap"><table class="stack"><caption>Rejected lines</caption><thead><tr><th>Line</th><th>External id</th><th>Errors</th></tr></thead><tbody>
${up.rejected.map((r) => html`<tr><td data-label="Line">${r.line}</td><td data-label="External id">${r.externalId ?? "–"}</td><td data-label="Errors">${r.errors.join("; ")}</td></tr>`)}
</tbody></table></div>${up.rejectedCount > up.rejected.length ? html`<p class="hint">First ${up.rejected.length} of ${up.rejectedCount} shown.</p>` : ""}`
  : ""}</section>`
  : ""}
<section class="card" aria-labelledby="health-h"><h2 id="health-h">Data quality</h2>
<p>Last sync: <strong>${when(q.lastSyncAt)}</strong> (${ago(q.lastSyncAt, d.now)}) · freshness ${badge(q.freshness)}</p>
<dl class="stats">
${filterLink(undefined, "All products", q.products)}
${filterLink("missing_gtin", "Missing GTIN", q.missingGtin)}
${filterLink("missing_images", "Missing images", q.missingImages)}
${filterLink("stale", "Stale", q.stale)}
${filterLink("out_of_stock", "Out of stock", q.outOfStock)}
</dl>
<p>${q.missingPolicies.length
  ? html`${badge("policies incomplete", "warn")} Missing: ${q.missingPolicies.join(", ")}. <a href="${storeBase(s.slug)}/settings#policies">Edit policies</a>`
  : html`${badge("policies complete", "ok")}`}</p>
</section>
<section class="card" aria-labelledby="upload-h"><h2 id="upload-h">Upload products (JSON lines)</h2>
<p class="hint">One product per line in the <code>PUT /catalog</code> shape (<code>externalId</code>, <code>title</code>, <code>price</code>, <code>currency</code>, …). Products are upserted by <code>externalId</code> in batches of 1,000; each line is validated on its own. Up to ${count(MAX_UPLOAD_LINES)} lines per file; import a larger catalog with the CLI (<code>bun run cli import</code>).</p>
${postForm(`${base}/upload`, session.csrfToken, html`<label for="file">JSONL file</label>
<input id="file" type="file" name="file" accept=".jsonl,.ndjson,.json,.txt,application/x-ndjson,application/json,text/plain" required>
<p><button type="submit">Upload</button></p>`, { multipart: true, label: "Upload products" })}
</section>
<section class="card" aria-labelledby="prod-h"><h2 id="prod-h">Products${d.flag ? html`: ${FLAG_LABEL[d.flag]}` : ""}</h2>
<form method="get" action="${base}" class="row" aria-label="Filter products"><div><label for="flag">Show</label>
<select id="flag" name="flag"><option value="">All products</option>${CATALOG_FLAGS.map(
      (f) => html`<option value="${f}"${f === d.flag ? html` selected` : ""}>${FLAG_LABEL[f]}</option>`,
    )}</select></div><div><button type="submit" class="secondary">Filter</button></div></form>
<div class="table-wrap"><table class="stack"><thead><tr><th>Product</th><th>External id</th><th class="num">Price</th><th class="num">Stock</th><th>GTIN</th><th class="num">Images</th><th>Synced</th><th>Flags</th></tr></thead><tbody>
${d.products.items.map(
  (p) => html`<tr><td data-label="Product">${p.title}</td><td data-label="External id"><code>${p.externalId}</code></td>
<td data-label="Price" class="num">${money(p.priceMinor, p.currency)}</td><td data-label="Stock" class="num">${p.stockQuantity === null ? (p.inStock ? "untracked" : "0") : p.stockQuantity}</td>
<td data-label="GTIN">${p.gtin ?? "–"}</td><td data-label="Images" class="num">${p.imageCount}</td><td data-label="Synced">${ago(p.syncedAt, d.now)}</td>
<td data-label="Flags">${p.flags.length ? p.flags.map((f) => badge(f)) : badge("ok", "ok")}</td></tr>`,
)}
${d.products.items.length === 0 ? html`<tr><td colspan="8">No products${d.flag ? " with this flag" : ""}.</td></tr>` : ""}
</tbody></table></div>
${pager(base, { flag: d.flag }, d.page, d.pageSize, d.products.total)}
</section>`,
  });
}
