/**
 * The page shell (landmarks: header, nav, main; skip link; one h1 per page), the navigation of a store's pages,
 * and small formatting helpers shared by the pages.
 */
import { toMajor } from "../../actors/store/schemas.ts";
import { CSS_PATH, JS_PATH } from "./assets.ts";
import { html, trusted, type Html, type Renderable } from "./html.ts";
import type { DashboardSession, Flash } from "./session.ts";

export type Section = "overview" | "catalog" | "orders" | "refunds" | "settings" | "webhooks";

const NAV: { section: Section; label: string; path: string }[] = [
  { section: "overview", label: "Overview", path: "" },
  { section: "catalog", label: "Catalog", path: "/catalog" },
  { section: "orders", label: "Orders", path: "/orders" },
  { section: "refunds", label: "Refunds", path: "/refunds" },
  { section: "settings", label: "Settings", path: "/settings" },
  { section: "webhooks", label: "Webhooks", path: "/settings/webhooks" },
];

export const storeBase = (slug: string): string => `/dashboard/s/${encodeURIComponent(slug)}`;

export interface Shell {
  title: string;
  session?: DashboardSession | null;
  store?: { slug: string; name: string } | null;
  section?: Section;
  flash?: Flash | null;
  body: Renderable;
}

export function page(s: Shell): Html {
  const store = s.store;
  const csrf = s.session?.csrfToken;
  const header = s.session
    ? html`<header class="top">
<a class="brand" href="/dashboard">Merchant dashboard</a>
${store ? html`<span>${store.name}</span> <a href="/dashboard?switch=1">Switch store</a>` : ""}
<span class="who">${s.session.user.email}${s.session.user.role === "operator" ? " (operator)" : ""}</span>
<a href="/dashboard/connected-apps">Connected apps</a>
<form method="post" action="/dashboard/logout"><input type="hidden" name="_csrf" value="${csrf}"><button type="submit">Log out</button></form>
</header>`
    : html`<header class="top"><span class="brand">Merchant dashboard</span></header>`;
  const nav = store
    ? html`<nav class="main" aria-label="Store sections"><ul>${NAV.map(
        (n) => html`<li><a href="${storeBase(store.slug) + n.path}"${n.section === s.section ? trusted(' aria-current="page"') : ""}>${n.label}</a></li>`,
      )}</ul></nav>`
    : "";
  const flash = s.flash ? html`<div class="flash ${s.flash.kind}" role="${s.flash.kind === "error" ? "alert" : "status"}">${s.flash.message}</div>` : "";
  return html`${trusted("<!doctype html>")}
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${s.title}${store ? ` · ${store.name}` : ""} · Merchant dashboard</title>
<link rel="stylesheet" href="${CSS_PATH}"><script src="${JS_PATH}" defer></script></head>
<body><a class="skip" href="#content">Skip to content</a>
${header}${nav}
<main id="content" tabindex="-1">${flash}${s.body}</main>
</body></html>`;
}

/** A POST form with the session's CSRF token; `confirm` asks first when scripts run. */
export function postForm(action: string, csrf: string, inner: Renderable, opts: { confirm?: string; cls?: string; multipart?: boolean; label?: string } = {}): Html {
  return html`<form method="post" action="${action}"${opts.multipart ? trusted(' enctype="multipart/form-data"') : ""}${opts.confirm ? html` data-confirm="${opts.confirm}"` : ""}${opts.cls ? html` class="${opts.cls}"` : ""}${opts.label ? html` aria-label="${opts.label}"` : ""}>
<input type="hidden" name="_csrf" value="${csrf}">${inner}</form>`;
}

export function money(minor: number, currency: string): string {
  const major = toMajor(minor, currency);
  try {
    return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(major);
  } catch {
    return `${major} ${currency}`;
  }
}

export function when(iso: string | Date | null | undefined): string {
  if (!iso) return "never";
  const d = typeof iso === "string" ? new Date(iso) : iso;
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function ago(iso: string | null | undefined, now: number): string {
  if (!iso) return "never";
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 5) return "just now";
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 172_800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

const TONE: Record<string, "ok" | "warn" | "bad" | ""> = {
  active: "ok",
  EXCELLENT: "ok",
  GOOD: "ok",
  ACCEPTABLE: "",
  CAUTION: "warn",
  RESTRICTED: "bad",
  deprioritized: "warn",
  hidden: "bad",
  suspended: "bad",
  fresh: "ok",
  good: "ok",
  stale: "warn",
  very_stale: "bad",
  unknown: "warn",
  delivered: "ok",
  paid: "",
  refunded: "warn",
  partially_refunded: "warn",
  canceled: "bad",
  PENDING_APPROVAL: "warn",
  APPROVED: "",
  REFUNDED: "ok",
  REJECTED: "bad",
  FAILED: "bad",
  allowed: "ok",
  blocked: "bad",
  closed: "ok",
  open: "bad",
  half_open: "warn",
  pending: "",
  failed: "warn",
  dead: "bad",
  missing_gtin: "warn",
  missing_images: "warn",
  out_of_stock: "warn",
  inactive: "",
};

export function badge(text: string, tone?: "ok" | "warn" | "bad" | ""): Html {
  const t = tone ?? TONE[text] ?? "";
  return html`<span class="badge${t ? ` ${t}` : ""}">${text.replace(/_/g, " ")}</span>`;
}

export function pager(base: string, params: Record<string, string | undefined>, page: number, pageSize: number, total: number): Html {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const link = (p: number) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
    q.set("page", String(p));
    return `${base}?${q.toString()}`;
  };
  return html`<nav class="pager" aria-label="Pages">
${page > 1 ? html`<a href="${link(page - 1)}" rel="prev">Previous</a>` : ""}
<span>Page ${page} of ${pages} (${total} in all)</span>
${page < pages ? html`<a href="${link(page + 1)}" rel="next">Next</a>` : ""}</nav>`;
}
