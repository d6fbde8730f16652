/**
 * Known devices of password log-in (review R2 J-1): a full per-account bucket must not lock the account's owner out,
 * or 100 wrong guesses from a few addresses would deny an account (the admin's included) its log-in at will. An
 * attempt counts as coming from a known device when
 *  - its browser carries a known-device cookie for this e-mail: a signed "<issued>.<mac>" entry, MAC over the
 *    e-mail's bucket digest and the issue time, set by a successful log-in on the dashboard or the consent form; or
 *  - its address (IPv6 by its /64, as the buckets key it) had a successful log-in for this e-mail within 30 days
 *    (table login_known_addresses, keyed digests only): what a REST client, which keeps no cookies, has.
 * Such an attempt passes a full per-account bucket and takes its unit from the account's known-device bucket
 * instead (`knownDeviceBucket`, as large as the per-e-mail one); the per-address bucket still counts too. So every
 * known device together adds at most one more per-e-mail allowance of guesses, however many addresses a holder of a
 * copied cookie or of several known addresses uses (review R5-2). The cookie is honoured on the browser forms only
 * (gateway/login.ts). Neither proof can be had without the password (or the owner's browser or network), and an
 * unknown attempt is answered exactly as before (no oracle). Addresses not vouched for in 30 days are deleted by a
 * periodic sweep (`sweepKnownAddresses`, review R5-3). docs/access.md.
 */
import { createHmac } from "node:crypto";
import { LOGIN_WINDOW_MS } from "../actors/agent/limits.ts";
import { bootHooks } from "../infra/boot-hooks.ts";
import { timingSafeEqualStr } from "../infra/crypto.ts";
import type { Sql } from "../infra/db.ts";
import { deriveKey } from "../infra/secrets.ts";
import { cookieIn, secureCookies, setCookie } from "./cookies.ts";
import { secretKey } from "./identity.ts";
import type { Services } from "./services.ts";

export const KNOWN_DEVICE_COOKIE = "acs_known_device";
/** How long a success vouches for its browser or address. */
export const KNOWN_DEVICE_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** Accounts remembered per browser (shared computers): the newest win. */
const MAX_ENTRIES = 5;
/** How often each gateway deletes the addresses no success has vouched for in KNOWN_DEVICE_TTL_MS. */
export const KNOWN_ADDRESS_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * The bucket a known-device attempt takes its unit from once the per-e-mail bucket is full (held by the same
 * `login/<digest>` actor). One per account, not per device: a per-device bucket would let a holder of a copied
 * cookie, or of several known addresses, add a fresh allowance per address or per cookie entry.
 */
export function knownDeviceBucket(perEmail: number, emailDigest: string): { id: string; limit: number; windowMs: number } {
  return { id: `login-known:${emailDigest}`, limit: perEmail, windowMs: LOGIN_WINDOW_MS };
}

function key(svc: Services): Buffer {
  let k = svc.extras.get("knownDeviceKey") as Buffer | undefined;
  if (!k) svc.extras.set("knownDeviceKey", (k = deriveKey(secretKey(svc), "login-known-device-v1")));
  return k;
}

function mac(svc: Services, emailDigest: string, issuedSec: number): string {
  return createHmac("sha256", key(svc)).update(`kd1|${emailDigest}|${issuedSec}`).digest("base64url").slice(0, 22);
}

function addressDigest(svc: Services, addressKey: string): string {
  return createHmac("sha256", key(svc)).update(`addr1|${addressKey}`).digest("base64url").slice(0, 32);
}

interface Entry {
  issuedSec: number;
  mac: string;
}

function entries(cookieHeader: string | null | undefined, nowMs: number): Entry[] {
  const out: Entry[] = [];
  for (const raw of (cookieIn(cookieHeader, KNOWN_DEVICE_COOKIE) ?? "").split("~").slice(0, MAX_ENTRIES)) {
    const m = /^(\d{1,12})\.([A-Za-z0-9_-]{22})$/.exec(raw);
    if (!m) continue;
    const issuedSec = Number(m[1]);
    if (issuedSec * 1000 + KNOWN_DEVICE_TTL_MS <= nowMs || issuedSec * 1000 > nowMs + 60_000) continue;
    out.push({ issuedSec, mac: m[2]! });
  }
  return out;
}

const forAccount = (svc: Services, e: Entry, emailDigest: string) => timingSafeEqualStr(e.mac, mac(svc, emailDigest, e.issuedSec));

/** Whether this attempt comes from a browser or address that signed in to the account before (see above). */
export async function isKnownDevice(svc: Services, emailDigest: string, addressKey: string, cookieHeader: string | null | undefined): Promise<boolean> {
  const now = svc.clock.now();
  if (entries(cookieHeader, now).some((e) => forAccount(svc, e, emailDigest))) return true;
  const rows = await svc.sql<{ n: number }[]>`
    SELECT 1 AS n FROM login_known_addresses
    WHERE email_digest = ${emailDigest} AND address_digest = ${addressDigest(svc, addressKey)}
      AND last_success_at > ${new Date(now - KNOWN_DEVICE_TTL_MS)}`;
  return rows.length > 0;
}

/** Records a successful log-in's address for the account (and forgets the account's addresses gone stale). */
export async function rememberAddress(svc: Services, emailDigest: string, addressKey: string): Promise<void> {
  const now = new Date(svc.clock.now());
  await svc.sql`
    INSERT INTO login_known_addresses (email_digest, address_digest, last_success_at)
    VALUES (${emailDigest}, ${addressDigest(svc, addressKey)}, ${now})
    ON CONFLICT (email_digest, address_digest) DO UPDATE SET last_success_at = EXCLUDED.last_success_at`;
  await svc.sql`DELETE FROM login_known_addresses WHERE email_digest = ${emailDigest} AND last_success_at <= ${new Date(now.getTime() - KNOWN_DEVICE_TTL_MS)}`;
}

/**
 * Deletes every known address no success has vouched for in KNOWN_DEVICE_TTL_MS (the age index
 * `login_known_addresses_age` serves it). `rememberAddress` forgets stale rows only of the account signing in, so
 * without this the rows of an account that stops signing in would stay for good (review R5-3). Returns the count.
 */
export async function sweepKnownAddresses(sql: Sql, nowMs: number): Promise<number> {
  const gone = await sql`DELETE FROM login_known_addresses WHERE last_success_at <= ${new Date(nowMs - KNOWN_DEVICE_TTL_MS)}`;
  return gone.count;
}

// Every process that serves log-ins sweeps at boot and then hourly, as the webhook dispatcher sweeps its overdue
// deliveries: one indexed DELETE, idempotent, so several gateways doing it costs nothing worth a durable reminder.
bootHooks.push({
  name: "login-known-addresses-sweep",
  roles: ["start", "gateway"],
  async run({ services }) {
    let running: Promise<unknown> | undefined;
    const sweep = () => {
      running ??= sweepKnownAddresses(services.sql, services.clock.now())
        .catch((err) => services.log.warn("could not sweep stale known log-in addresses", { error: err as Error }))
        .finally(() => (running = undefined));
    };
    sweep();
    const timer = setInterval(sweep, KNOWN_ADDRESS_SWEEP_INTERVAL_MS);
    (timer as { unref?: () => void }).unref?.();
    return async () => {
      clearInterval(timer);
      await running;
    };
  },
});

/**
 * The Set-Cookie value after a successful browser log-in: a fresh entry for this account first, then the
 * browser's other still-valid entries (other accounts), at most five. Path=/ because the dashboard's log-in and
 * the consent form live under different paths; HttpOnly, SameSite=Strict (both forms post from our own pages).
 */
export function knownDeviceCookie(svc: Services, emailDigest: string, cookieHeader: string | null | undefined): string {
  const now = svc.clock.now();
  const issuedSec = Math.floor(now / 1000);
  const others = entries(cookieHeader, now).filter((e) => !forAccount(svc, e, emailDigest));
  const value = [{ issuedSec, mac: mac(svc, emailDigest, issuedSec) }, ...others]
    .slice(0, MAX_ENTRIES)
    .map((e) => `${e.issuedSec}.${e.mac}`)
    .join("~");
  return setCookie(KNOWN_DEVICE_COOKIE, value, { path: "/", maxAgeSeconds: KNOWN_DEVICE_TTL_MS / 1000, secure: secureCookies(svc) });
}
