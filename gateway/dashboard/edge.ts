/**
 * The dashboard's answers to failures found before any dashboard route ran, which the error plugin
 * (gateway/plugins/errors.ts) hands here for paths under /dashboard: a person's browser gets the dashboard's HTML
 * pages with its headers (CSP, X-Frame-Options, no agent transparency headers), never the API's JSON envelope.
 * - a form over the body limit: the 413 page (too-large.ts);
 * - a GET on a form's POST URL, which the address bar shows after an answer rendered on a POST (the upload's
 *   result, a rotated secret): 303 to the nearest page above it (…/catalog/upload → …/catalog);
 * - another method a dashboard path does not take: the 405 page with `Allow`, worded for a page or a form's address;
 * - an unknown path: the 404 page (audit X-F4).
 */
import { errorPage } from "./pages/basic.ts";
import { dashboardTooLarge, htmlHeaders } from "./too-large.ts";

type Headers = Record<string, string | number>;

/** True for /dashboard and the paths under it. */
export const isDashboardPath = (pathname: string): boolean => pathname === "/dashboard" || pathname.startsWith("/dashboard/");

/** Only our own dashboard paths are accepted as a post-login target or a redirect (no open redirect). */
export function safeNext(next: string | null | undefined): string {
  if (typeof next !== "string" || !next.startsWith("/dashboard")) return "/dashboard";
  if (next.includes("//") || next.includes("\\") || /[\u0000-\u001f]/.test(next)) return "/dashboard";
  // Resolved the way a browser would, so "/dashboard/../x" cannot leave the dashboard.
  const u = new URL(next, "http://dashboard.invalid");
  if (u.origin !== "http://dashboard.invalid" || !isDashboardPath(u.pathname)) return "/dashboard";
  return u.pathname + u.search;
}

/**
 * The dashboard's answer for a failure on `pathname` before its route ran (Elysia's error `code`, the `error`), or
 * undefined when it is not a dashboard path or not one of the failures above (the plugin's own answer stands).
 * `allowedAt(path)` names the methods routed at a path (the plugin's route table).
 */
export function dashboardEdgeAnswer(
  pathname: string,
  method: string,
  code: unknown,
  error: unknown,
  set: { status?: number | string; headers: Headers },
  allowedAt: (path: string) => string[],
): string | undefined {
  if (!isDashboardPath(pathname)) return undefined;
  const tooLarge = dashboardTooLarge(pathname, error, set);
  if (tooLarge !== undefined || code !== "NOT_FOUND") return tooLarge;
  htmlHeaders(set.headers);
  const allowed = allowedAt(pathname);
  if (allowed.length === 0) {
    set.status = 404;
    return errorPage(null, 404, "Not found", "There is no such page in the dashboard.").value;
  }
  if (method === "GET" || method === "HEAD") {
    for (let p = pathname.slice(0, pathname.lastIndexOf("/")); isDashboardPath(p); p = p.slice(0, p.lastIndexOf("/"))) {
      if (allowedAt(p).includes("GET") && safeNext(p) === p) {
        set.status = 303;
        set.headers.location = p;
        return "";
      }
    }
  }
  set.status = 405;
  set.headers.allow = allowed.join(", ");
  // A page (it opens with GET) told apart from a form's address (review RS-6: a POST to a page was told the page
  // "only answers a form (GET or HEAD)").
  const text = allowed.includes("GET")
    ? `This page opens from a link or the address bar (${allowed.join(" or ")}); it does not take what was sent. Open it again from its link.`
    : `This address only answers a form (${allowed.join(" or ")}). Go back to the page the form was on.`;
  return errorPage(null, 405, "Not available this way", text).value;
}
