/**
 * Password log-in, one path for the three forms that take a password: POST /api/v1/auth/login, the OAuth consent
 * form's "allow" (POST /api/v1/oauth/authorize) and POST /dashboard/login. Before any hash is verified the attempt
 * passes the shared log-in buckets (actors/agent/limits.ts `loginBuckets`: per address, per e-mail); a successful
 * log-in gives its units back, so the buckets count failed guesses. The buckets are durable (the owner writes every
 * count before it answers: actors/ip/stored-buckets.ts), so no restart of the actor hosts, kill -9 included, gives a
 * guesser fresh ones (audit Z-1). Verification is bounded in concurrency
 * (infra/passwords.ts): past the queue the answer is 503 service_unavailable with Retry-After, and the attempt's
 * units are given back too (nothing was checked). A successful log-in with a hash of older parameters stores a fresh
 * one, so every account converges on the cost of the dummy hash (no timing tells which e-mails exist).
 * An attempt from a known device (login-known.ts: a browser or address that signed in to the account before) passes
 * a full per-e-mail bucket, so guessers from elsewhere cannot lock the owner out; it takes a unit from the account's
 * known-device bucket instead (as large as the per-e-mail one), and its address bucket still counts.
 */
import { createHmac } from "node:crypto";
import { ipBucketKey, loginBuckets, type BucketDescriptor } from "../actors/agent/limits.ts";
import type { RateView } from "../actors/agent/messages.ts";
import { ipActor } from "../actors/ip/index.ts";
import { fail } from "../actors/runtime/errors.ts";
import { PasswordChecksBusy, upgradedHash, verifyLoginTimingSafe } from "../infra/passwords.ts";
import { deriveKey } from "../infra/secrets.ts";
import { secretKey } from "./identity.ts";
import { appendSetCookie } from "./cookies.ts";
import { isKnownDevice, knownDeviceBucket, knownDeviceCookie, rememberAddress } from "./login-known.ts";
import { setRateHeaders } from "./plugins/auth.ts";
import type { Services } from "./services.ts";

type Headers = Record<string, string | number>;

/** Retry-After of the 503 when every verification slot and queue place is taken: the queue drains in about a second. */
export const LOGIN_BUSY_RETRY_AFTER_SECONDS = 2;

export interface LoginUser {
  id: string;
  email: string;
  role: string;
}

export interface LoginAttempt {
  /** The client address (plugins/auth.ts `clientIp`). */
  ip: string;
  email: string;
  password: string;
  /** The response headers: rate headers, Retry-After on a refusal; the known-device cookie of a browser form. */
  headers: Headers;
  /** The request's Cookie header: a known-device cookie in it lets the attempt pass a full per-e-mail bucket (browser forms only). */
  cookie?: string | null;
  /** A browser form (dashboard, consent form): a success sets the known-device cookie. */
  browser?: boolean;
}

interface Taken {
  owner: string;
  specs: { id: string; limit: number; windowMs: number }[];
  consumedAt: number;
}

/** The e-mail's bucket key: keyed, so actor ids and bucket ids never carry (or let anyone guess back) an address. */
function emailDigest(svc: Services, email: string): string {
  let k = svc.extras.get("loginBucketKey") as Buffer | undefined;
  if (!k) svc.extras.set("loginBucketKey", (k = deriveKey(secretKey(svc), "login-bucket-v1")));
  return createHmac("sha256", k).update(email).digest("base64url").slice(0, 32);
}

function specsOf(list: readonly BucketDescriptor[]) {
  return list.map(({ id, limit, windowMs }) => ({ id, limit, windowMs }));
}

async function giveBack(svc: Services, taken: readonly Taken[]): Promise<void> {
  await Promise.all(taken.map((t) => svc.actors.ask(ipActor, t.owner, "releaseDurable", { buckets: t.specs, consumedAt: t.consumedAt }).catch(() => null)));
}

/** Shows the log-in bucket in the rate headers when it is tighter than what an earlier layer put there. */
function showIfTighter(headers: Headers, rate: RateView): void {
  const shown = Number(headers["x-ratelimit-remaining"]);
  if (!Number.isFinite(shown) || rate.remaining <= shown) setRateHeaders(headers, rate);
}

/** The 429 of the log-in buckets, with the refusing bucket's headers. */
function refuse(headers: Headers, rate: RateView): never {
  setRateHeaders(headers, rate);
  throw fail("rate_limit_exceeded", "Too many log-in attempts from this address or for this account; wait until X-RateLimit-Reset.", { ...rate });
}

/**
 * Takes one unit from each log-in bucket (address first), or throws 429 rate_limit_exceeded with the headers set.
 * A full per-e-mail bucket is passed by an attempt from a known device (only then is that looked up: one indexed
 * read, and only while the account is under attack), which takes its unit from the account's known-device bucket.
 * Every owner's memory is asked first (`peek`: memory only, no turn to wait for), so an attempt that a bucket the
 * owners already know to be full refuses writes nothing: before, the address owner wrote its unit and gave it back
 * when the e-mail owner refused, two writes per 429 for a guesser hammering a locked account (review RQ MED-3).
 */
async function admitLogin(svc: Services, a: LoginAttempt, digest: string | undefined): Promise<Taken[]> {
  const headers = a.headers;
  if (!svc.config.RATE_LIMITS_ENABLED) return [];
  const limits = { perIp: svc.config.LOGIN_LIMIT_PER_IP, perEmail: svc.config.LOGIN_LIMIT_PER_EMAIL };
  const byOwner = new Map<string, BucketDescriptor[]>();
  for (const b of loginBuckets(limits, a.ip, digest)) {
    const list = byOwner.get(b.owner);
    if (list) list.push(b);
    else byOwner.set(b.owner, [b]);
  }
  // Only the browser forms set the cookie, so only they may show it: a REST client proves a known device by its
  // address alone (review R5-2: a copied cookie sent over REST from any number of addresses).
  let known: boolean | undefined;
  const knownDevice = async () => (known ??= await isKnownDevice(svc, digest!, ipBucketKey(a.ip), a.browser ? a.cookie : null));
  const owners = [...byOwner];
  const seen = await Promise.all(owners.map(([owner, list]) => svc.actors.ask(ipActor, owner, "peek", { buckets: specsOf(list) })));
  for (let i = 0; i < owners.length; i++) {
    const view = seen[i]!;
    if (view.remaining > 0) continue;
    // full as the owner knows it: refused with no write, unless a known device may pass the account's bucket
    if (digest !== undefined && owners[i]![0] === `login/${digest}` && (await knownDevice())) continue;
    refuse(headers, { ...view, remaining: 0, retryAfter: Math.max(1, view.reset - Math.floor(Date.now() / 1000)) });
  }
  const taken: Taken[] = [];
  let tightest: RateView | null = null;
  for (const [owner, list] of owners) {
    let specs = specsOf(list);
    let res = await svc.actors.ask(ipActor, owner, "admitDurable", { buckets: specs });
    const accountBucket = digest !== undefined && owner === `login/${digest}`;
    if (!res.allowed && accountBucket && (await knownDevice())) {
      // The account's known-device bucket (as large as the per-e-mail one) bounds what every known device together
      // may try, so a copied cookie or many known addresses cannot multiply the account's guesses (R5-2).
      specs = [knownDeviceBucket(limits.perEmail, digest)];
      res = await svc.actors.ask(ipActor, owner, "admitDurable", { buckets: specs });
    }
    if (!res.allowed) {
      await giveBack(svc, taken);
      refuse(headers, res.rate);
    }
    taken.push({ owner, specs, consumedAt: res.consumedAt });
    if (!tightest || res.rate.remaining < tightest.remaining) tightest = res.rate;
  }
  if (tightest) showIfTighter(headers, tightest);
  return taken;
}

/** Stores a fresh hash when the stored one has other parameters. Best effort: the log-in has succeeded already. */
async function upgrade(svc: Services, userId: string, storedHash: string, password: string): Promise<void> {
  try {
    const fresh = await upgradedHash(storedHash, password);
    // conditional on the old hash: a password changed meanwhile is not overwritten
    if (fresh) await svc.sql`UPDATE users SET password_hash = ${fresh} WHERE id = ${userId} AND password_hash = ${storedHash}`;
  } catch (err) {
    if (!(err instanceof PasswordChecksBusy)) svc.log.warn("could not upgrade a password hash", { error: err as Error });
  }
}

/** Makes this browser (the forms) and this address known devices of the account. Best effort, like `upgrade`. */
async function remember(svc: Services, a: LoginAttempt, digest: string): Promise<void> {
  if (a.browser) appendSetCookie(a.headers, knownDeviceCookie(svc, digest, a.cookie));
  try {
    await rememberAddress(svc, digest, ipBucketKey(a.ip));
  } catch (err) {
    svc.log.warn("could not record a log-in's address", { error: err as Error });
  }
}

/**
 * Checks an e-mail and password: the user, or null for wrong credentials (whether or not the e-mail exists, at the
 * same cost). Throws rate_limit_exceeded (429) past the log-in buckets and service_unavailable (503) when the
 * verification queue is full; both with their headers set on `a.headers`.
 */
export async function passwordLogin(svc: Services, a: LoginAttempt): Promise<LoginUser | null> {
  const email = a.email.trim().toLowerCase();
  const digest = email ? emailDigest(svc, email) : undefined;
  const taken = await admitLogin(svc, a, digest);
  const rows = await svc.sql<{ id: string; email: string; password_hash: string; role: string }[]>`
    SELECT id, email, password_hash, role FROM users WHERE lower(email) = ${email}`;
  const user = rows[0];
  let valid: boolean;
  try {
    valid = await verifyLoginTimingSafe(user?.password_hash ?? null, a.password);
  } catch (err) {
    if (!(err instanceof PasswordChecksBusy)) throw err;
    await giveBack(svc, taken);
    a.headers["retry-after"] = String(LOGIN_BUSY_RETRY_AFTER_SECONDS);
    throw fail("service_unavailable", `Too many log-ins are being checked right now; retry after ${LOGIN_BUSY_RETRY_AFTER_SECONDS} seconds.`, {
      retryAfterSeconds: LOGIN_BUSY_RETRY_AFTER_SECONDS,
    });
  }
  if (!user || !valid) return null;
  await giveBack(svc, taken);
  await upgrade(svc, user.id, user.password_hash, a.password);
  await remember(svc, a, digest!);
  return { id: user.id, email: user.email, role: user.role };
}
