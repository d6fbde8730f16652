/**
 * Our browser cookies (the dashboard's session and log-in nonce, the consent form's nonce, the known-device cookie):
 * one Set-Cookie shape, one Secure rule and one Cookie-header parser for all of them.
 */
import { issuer } from "./oauth/common.ts";
import type { Services } from "./services.ts";

/**
 * `Secure` when the site is served over https (SITE_URL) or in production, which is assumed to sit behind TLS even
 * when SITE_URL is left at its http default. Over https a cookie without it would also be sent over plain http.
 */
export function secureCookies(svc: Services): boolean {
  return issuer(svc).startsWith("https://") || svc.config.NODE_ENV === "production";
}

/** Pure: the Set-Cookie value of one of our cookies (always HttpOnly, SameSite=Strict). maxAgeSeconds 0 clears it. */
export function setCookie(name: string, value: string, opts: { path: string; maxAgeSeconds: number; secure: boolean }): string {
  return [
    `${name}=${value}`,
    `Path=${opts.path}`,
    "HttpOnly",
    "SameSite=Strict",
    `Max-Age=${Math.max(0, Math.floor(opts.maxAgeSeconds))}`,
    ...(opts.secure ? ["Secure"] : []),
  ].join("; ");
}

/** The value of cookie `name` in a Cookie header, or null (name and value trimmed; a part without `=` is skipped). */
export function cookieIn(header: string | null | undefined, name: string): string | null {
  for (const part of (header ?? "").split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    if (part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return null;
}

export function cookieOf(request: Request, name: string): string | null {
  return cookieIn(request.headers.get("cookie"), name);
}

/** Adds a Set-Cookie header to an Elysia `set.headers` without replacing one already there (`first`: before it). */
export function appendSetCookie(headers: Record<string, unknown>, cookie: string, first = false): void {
  const prior = headers["set-cookie"];
  if (prior === undefined) {
    headers["set-cookie"] = cookie;
    return;
  }
  const list = Array.isArray(prior) ? prior.map(String) : [String(prior)];
  headers["set-cookie"] = first ? [cookie, ...list] : [...list, cookie];
}
