/**
 * Webhook signatures, Stripe-compatible: header `X-Webhook-Signature: t=<unix seconds>,v1=<hex>` where v1 is
 * HMAC-SHA256 keyed with the whole `whsec_…` secret string over `<t>.<raw body>`. During a secret rotation the
 * header carries one v1 per active secret, so receivers holding either secret verify it (Stripe's own
 * `webhooks.constructEvent` accepts our headers). The spec's older variant (HMAC of the raw body alone) is neither
 * produced nor accepted: without the timestamp in the MAC, replay protection is impossible.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { toBase62 } from "../agent/keys.ts";

export const WEBHOOK_SIGNATURE_HEADER = "X-Webhook-Signature";
export const WEBHOOK_SECRET_PREFIX = "whsec_";
export const WEBHOOK_TOLERANCE_SEC = 300;

export type RawBody = string | Uint8Array;

/** `whsec_` + 43 base62 characters (256 random bits). Stored encrypted: the sender needs it in clear to sign. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + toBase62(randomBytes(32), 43);
}

export function isWebhookSecret(value: string): boolean {
  return /^whsec_[0-9A-Za-z]{43}$/.test(value);
}

function assertSecret(secret: string): void {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX) || secret.length <= WEBHOOK_SECRET_PREFIX.length) {
    throw new Error("webhook secrets are formatted whsec_…");
  }
}

function assertTimestamp(t: number): void {
  if (!Number.isSafeInteger(t) || t < 0) throw new Error("t must be a non-negative integer of Unix seconds");
}

/** Hex HMAC-SHA256(secret, `<t>.<rawBody>`). */
export function computeWebhookSignature(secret: string, rawBody: RawBody, t: number): string {
  assertSecret(secret);
  assertTimestamp(t);
  return createHmac("sha256", secret).update(`${t}.`, "utf8").update(rawBody).digest("hex");
}

export function signWebhook(secret: string, rawBody: RawBody, t: number): string {
  return `t=${t},v1=${computeWebhookSignature(secret, rawBody, t)}`;
}

/** One `v1` entry per secret (rotation overlap: the new secret first, the retiring one after). */
export function signWebhookMulti(secrets: readonly string[], rawBody: RawBody, t: number): string {
  if (secrets.length === 0) throw new Error("at least one secret is needed");
  return [`t=${t}`, ...secrets.map((s) => `v1=${computeWebhookSignature(s, rawBody, t)}`)].join(",");
}

export interface ParsedSignatureHeader {
  t: number;
  v1: string[];
}

/** Parses `t=…,v1=…[,v1=…]`; unknown schemes (v0, …) are ignored as Stripe does. Null when malformed. */
export function parseSignatureHeader(header: string): ParsedSignatureHeader | null {
  let t: number | null = null;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === "t") {
      if (!/^\d{1,12}$/.test(v) || t !== null) return null;
      t = Number(v);
    } else if (k === "v1" && /^[0-9a-f]{64}$/i.test(v)) {
      v1.push(v.toLowerCase());
    }
  }
  return t === null || v1.length === 0 ? null : { t, v1 };
}

export type WebhookVerification =
  | { ok: true; timestamp: number }
  | { ok: false; reason: "malformed_header" | "no_matching_signature" | "timestamp_out_of_tolerance" };

export interface VerifyWebhookOptions {
  /** Maximum distance between `t` and now, seconds. Default 300. */
  toleranceSec?: number;
  /** Current time in Unix SECONDS; defaults to the system clock. */
  now?: number;
}

/**
 * Receiver-side check (also used by our own tests and the CLI). Compares every v1 against every secret with
 * timingSafeEqual and without an early exit, then enforces the timestamp tolerance in both directions.
 */
export function verifyWebhook(
  header: string | null | undefined,
  rawBody: RawBody,
  secret: string | readonly string[],
  opts: VerifyWebhookOptions = {},
): WebhookVerification {
  const parsed = typeof header === "string" ? parseSignatureHeader(header) : null;
  if (!parsed) return { ok: false, reason: "malformed_header" };
  const secrets = typeof secret === "string" ? [secret] : secret;
  let matched = false;
  for (const s of secrets) {
    const expected = Buffer.from(computeWebhookSignature(s, rawBody, parsed.t), "hex");
    for (const candidate of parsed.v1) {
      if (timingSafeEqual(expected, Buffer.from(candidate, "hex"))) matched = true;
    }
  }
  if (!matched) return { ok: false, reason: "no_matching_signature" };
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const tolerance = opts.toleranceSec ?? WEBHOOK_TOLERANCE_SEC;
  if (Math.abs(now - parsed.t) > tolerance) return { ok: false, reason: "timestamp_out_of_tolerance" };
  return { ok: true, timestamp: parsed.t };
}
