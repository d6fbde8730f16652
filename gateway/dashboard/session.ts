/**
 * Dashboard sessions: a random 256-bit id in an HttpOnly, SameSite=Strict cookie scoped to /dashboard (`Secure`
 * over https or when NODE_ENV=production, gateway/cookies.ts); the database keeps only its SHA-256 (`dashboard_sessions`, migration 0070). A session
 * ends on log-out, 8 hours after log-in, or after 2 hours without a request.
 *
 * CSRF: every state-changing form carries `_csrf` = HMAC(key derived from SECRET_KEY, the session's random
 * csrf_secret). A POST without it, with another session's token or with a wrong one is refused with 403. The
 * log-in form (no session yet) uses a double-submit nonce: a short-lived HttpOnly cookie and an HMAC of it in the
 * form. SameSite=Strict keeps the cookies off cross-site requests as a second line.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { timingSafeEqualStr } from "../../infra/crypto.ts";
import { deriveKey } from "../../infra/secrets.ts";
import { secretKey } from "../identity.ts";
import { cookieOf, secureCookies, setCookie } from "../cookies.ts";
import type { UserPrincipal } from "../plugins/auth.ts";
import type { Services } from "../services.ts";

export const SESSION_COOKIE = "acs_dash";
export const LOGIN_COOKIE = "acs_dash_login";
export const DASHBOARD_BASE = "/dashboard";
export const SESSION_TTL_MS = 8 * 3_600_000;
export const SESSION_IDLE_MS = 2 * 3_600_000;
/** last_seen_at is written at most this often (a page view should not always cost a write). */
const TOUCH_EVERY_MS = 60_000;
const LOGIN_NONCE_TTL_S = 1800;

export interface Flash {
  kind: "ok" | "error";
  message: string;
}

export interface DashboardSession {
  idHash: string;
  user: UserPrincipal;
  csrfToken: string;
  storeSlug: string | null;
  expiresAt: Date;
}

function key(svc: Services, purpose: string): Buffer {
  const name = `dashboardKey:${purpose}`;
  let k = svc.extras.get(name) as Buffer | undefined;
  if (!k) svc.extras.set(name, (k = deriveKey(secretKey(svc), `dashboard-${purpose}-v1`)));
  return k;
}

const sha256 = (s: string): string => createHash("sha256").update(s, "utf8").digest("hex");

export function csrfTokenFor(svc: Services, csrfSecret: string): string {
  return createHmac("sha256", key(svc, "csrf")).update(csrfSecret).digest("base64url");
}

/** Pure: the Set-Cookie value of a dashboard cookie (Path=/dashboard unless given). maxAgeSeconds 0 clears it. */
export function buildCookie(name: string, value: string, opts: { secure: boolean; maxAgeSeconds: number; path?: string }): string {
  return setCookie(name, value, { ...opts, path: opts.path ?? DASHBOARD_BASE });
}

export async function createSession(svc: Services, userId: string): Promise<{ id: string; expiresAt: Date }> {
  const id = randomBytes(32).toString("base64url");
  const csrfSecret = randomBytes(32).toString("base64url");
  const expiresAt = new Date(svc.clock.now() + SESSION_TTL_MS);
  await svc.sql`INSERT INTO dashboard_sessions (id_hash, user_id, csrf_secret, expires_at, last_seen_at)
    VALUES (${sha256(id)}, ${userId}, ${csrfSecret}, ${expiresAt}, ${new Date(svc.clock.now())})`;
  // Housekeeping: expired rows of this user go with each new log-in.
  await svc.sql`DELETE FROM dashboard_sessions WHERE user_id = ${userId} AND expires_at < ${new Date(svc.clock.now())}`;
  return { id, expiresAt };
}

/** The session of the request's cookie, or null when absent, unknown, expired or idle too long. */
export async function loadSession(svc: Services, request: Request): Promise<DashboardSession | null> {
  const id = cookieOf(request, SESSION_COOKIE);
  if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
  const idHash = sha256(id);
  const [row] = await svc.sql<{ user_id: string; csrf_secret: string; store_slug: string | null; expires_at: Date; last_seen_at: Date; email: string; role: string }[]>`
    SELECT s.user_id, s.csrf_secret, s.store_slug, s.expires_at, s.last_seen_at, u.email, u.role
    FROM dashboard_sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ${idHash}`;
  if (!row) return null;
  const now = svc.clock.now();
  if (row.expires_at.getTime() <= now || now - row.last_seen_at.getTime() > SESSION_IDLE_MS) {
    await svc.sql`DELETE FROM dashboard_sessions WHERE id_hash = ${idHash}`;
    return null;
  }
  if (now - row.last_seen_at.getTime() > TOUCH_EVERY_MS) await svc.sql`UPDATE dashboard_sessions SET last_seen_at = ${new Date(now)} WHERE id_hash = ${idHash}`;
  if (row.role !== "operator" && row.role !== "merchant") return null;
  return {
    idHash,
    user: { id: row.user_id, email: row.email, role: row.role },
    csrfToken: csrfTokenFor(svc, row.csrf_secret),
    storeSlug: row.store_slug,
    expiresAt: row.expires_at,
  };
}

export function csrfValid(session: DashboardSession, token: string | null | undefined): boolean {
  return typeof token === "string" && token.length > 0 && timingSafeEqualStr(token, session.csrfToken);
}

export async function destroySession(svc: Services, session: DashboardSession): Promise<void> {
  await svc.sql`DELETE FROM dashboard_sessions WHERE id_hash = ${session.idHash}`;
}

export async function rememberStore(svc: Services, session: DashboardSession, slug: string): Promise<void> {
  if (session.storeSlug !== slug) await svc.sql`UPDATE dashboard_sessions SET store_slug = ${slug} WHERE id_hash = ${session.idHash}`;
}

export async function setFlash(svc: Services, session: DashboardSession, flash: Flash): Promise<void> {
  await svc.sql`UPDATE dashboard_sessions SET flash = ${svc.sql.json(flash as never)} WHERE id_hash = ${session.idHash}`;
}

/** The pending notice, cleared as it is read. */
export async function takeFlash(svc: Services, session: DashboardSession): Promise<Flash | null> {
  const rows = await svc.sql<{ flash: Flash | null }[]>`
    UPDATE dashboard_sessions s SET flash = NULL FROM (SELECT flash FROM dashboard_sessions WHERE id_hash = ${session.idHash} FOR UPDATE) old
    WHERE s.id_hash = ${session.idHash} AND old.flash IS NOT NULL RETURNING old.flash`;
  return rows[0]?.flash ?? null;
}

// ------------------------------------------------------------------------------------------- log-in CSRF

/** 32 random bytes, base64url: the shape `newLoginNonce` mints. */
const LOGIN_NONCE_SHAPE = /^[A-Za-z0-9_-]{43}$/;

function newLoginNonce(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * The log-in nonce for this browser: its cookie's when it has our shape, else a new one. Minting one per page view
 * overwrote the cookie, so a log-in page opened in a second tab (every open tab lands there when the session ends)
 * made the first tab's log-in fail with "Form expired" (audit X-F3). The token stays bound to the cookie, so the
 * login-CSRF protection is the same: a page that cannot read or set the cookie cannot make a token that matches it.
 */
export function loginNonce(request: Request): string {
  const current = cookieOf(request, LOGIN_COOKIE);
  return current !== null && LOGIN_NONCE_SHAPE.test(current) ? current : newLoginNonce();
}

export function loginToken(svc: Services, nonce: string): string {
  return createHmac("sha256", key(svc, "login")).update(nonce).digest("base64url");
}

export function loginCsrfValid(svc: Services, request: Request, token: string | null | undefined): boolean {
  const nonce = cookieOf(request, LOGIN_COOKIE);
  return !!nonce && typeof token === "string" && token.length > 0 && timingSafeEqualStr(token, loginToken(svc, nonce));
}

export const loginCookie = (svc: Services, nonce: string): string =>
  buildCookie(LOGIN_COOKIE, nonce, { secure: secureCookies(svc), maxAgeSeconds: LOGIN_NONCE_TTL_S, path: `${DASHBOARD_BASE}/login` });
