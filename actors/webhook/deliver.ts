/**
 * One delivery attempt over HTTP, and the process-wide settings the `webhook` actor needs (the sealing key,
 * whether private addresses are allowed, the DNS resolver, the per-attempt timeout). The settings are installed
 * by the webhook boot hook (actors/webhook/dispatcher.ts) in every process that hosts actors.
 *
 * SSRF: the URL is vetted again at every attempt (DNS answers change), and the request goes to a vetted IP itself
 * with the original Host header and TLS server name (infra/outbound-http.ts `fetchVetted`), so a second lookup at
 * connect time cannot send it elsewhere (DNS rebinding). A name with several addresses has its connects raced (Happy
 * Eyeballs): the delivery is sent to the first address that connected only, and to another only while none ever
 * accepted the connection (nothing sent), never after. Redirects are never followed: a 3xx is a failed attempt.
 */
import { openString, seal } from "../../infra/crypto.ts";
import { deriveKey } from "../../infra/secrets.ts";
import { webhookAttemptDuration, webhookAttempts } from "../../infra/metrics.ts";
import { fetchVetted } from "../../infra/outbound-http.ts";
import { assertPublicUrl, type Resolver, type VettedUrl } from "../../infra/ssrf.ts";
import { ActorError } from "../runtime/errors.ts";
import { WEBHOOK_ATTEMPT_TIMEOUT_MS } from "./schedule.ts";
import { signWebhookMulti } from "./signature.ts";

export const WEBHOOK_USER_AGENT = "AgentCommerceService-Webhooks/1.0 (+docs/webhooks.md)";
/** How long the retiring secret keeps signing after a rotation (documented in docs/webhooks.md). */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 3600_000;

export interface WebhookRuntime {
  /** Sub-key of SECRET_KEY that seals endpoint secrets. */
  secretsKey: Uint8Array;
  allowPrivate: boolean;
  attemptTimeoutMs: number;
  resolve?: Resolver;
}

let current: (() => WebhookRuntime) | undefined;

/** Installed by the boot hook; a getter so tests can adjust the timeout/resolver of a running server. */
export function installWebhookRuntime(get: () => WebhookRuntime): () => void {
  current = get;
  return () => {
    if (current === get) current = undefined;
  };
}

export function webhookRuntime(): WebhookRuntime {
  if (!current) throw new ActorError("service_unavailable", "webhook runtime not installed in this process");
  return current();
}

export function webhookSecretsKey(kek: Uint8Array): Uint8Array {
  return new Uint8Array(deriveKey(kek, "webhook-secrets"));
}

const aad = (endpointId: string) => `webhook-secret:${endpointId}`;

export function sealWebhookSecret(key: Uint8Array, endpointId: string, secret: string): string {
  return seal(key, secret, aad(endpointId));
}

export function openWebhookSecret(key: Uint8Array, endpointId: string, sealed: string): string {
  return openString(key, sealed, aad(endpointId));
}

export interface AttemptInput {
  url: string;
  eventId: string;
  eventKind: string;
  /** The exact bytes that are signed and sent. */
  body: string;
  attempt: number;
  /** Active secrets, newest first. */
  secrets: string[];
  /** Unix seconds for `t=`. */
  timestampSec: number;
  timeoutMs?: number;
  allowPrivate: boolean;
  resolve?: Resolver;
}

export interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  delivered: boolean;
  durationMs: number;
}

export function deliveryHeaders(input: Pick<AttemptInput, "eventId" | "eventKind" | "body" | "attempt" | "secrets" | "timestampSec">): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": WEBHOOK_USER_AGENT,
    "x-webhook-signature": signWebhookMulti(input.secrets, input.body, input.timestampSec),
    "x-webhook-id": input.eventId,
    "x-webhook-event": input.eventKind,
    "x-webhook-attempt": String(input.attempt),
  };
}

/**
 * An error text without any URL's path or query: Bun's fetch errors can name the target (a TLS name mismatch reads
 * `ERR_TLS_CERT_ALTNAME_INVALID fetching "https://<ip>/hooks?token=…"`), and the text becomes the delivery's
 * `lastError`, the endpoint's `disabledReason` and the "webhook endpoint disabled" warning, which promises the host
 * only, never the path or query that may hold the receiver's token (audit W-8). A URL is replaced by its scheme and
 * the endpoint's host as registered.
 */
export function withoutUrlPaths(text: string, host: string): string {
  return text.replace(/\b(https?):\/\/[^\s"'<>]*/gi, (_m, scheme: string) => `${scheme.toLowerCase()}://${host}/…`);
}

export async function attemptDelivery(input: AttemptInput): Promise<AttemptResult> {
  const started = performance.now();
  const done = (statusCode: number | null, error: string | null): AttemptResult => {
    const seconds = (performance.now() - started) / 1000;
    const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300;
    webhookAttempts.inc({ outcome: delivered ? "delivered" : "failed" });
    webhookAttemptDuration.observe(seconds);
    return { statusCode, error, delivered, durationMs: Math.round(seconds * 1000) };
  };
  let vetted: VettedUrl;
  try {
    vetted = await assertPublicUrl(input.url, { allowPrivate: input.allowPrivate, resolve: input.resolve });
  } catch (err) {
    const reason = err instanceof ActorError ? String(err.details?.reason ?? err.code) : "invalid_url";
    return done(null, `refused before connecting: ${reason} (${(err as Error).message})`);
  }
  const hostHeader = vetted.url.host;
  const timeoutMs = input.timeoutMs ?? WEBHOOK_ATTEMPT_TIMEOUT_MS;
  try {
    const res = await fetchVetted(vetted, { method: "POST", headers: deliveryHeaders(input), body: input.body, timeoutMs });
    // The answer's body is not used; drop it so the connection can be reused.
    await res.body?.cancel().catch(() => {});
    if (res.status >= 300 && res.status < 400) return done(res.status, "redirect not followed");
    return done(res.status, res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}`);
  } catch (err) {
    const e = err as Error;
    if (e?.name === "TimeoutError" || e?.name === "AbortError") return done(null, `timeout after ${timeoutMs} ms`);
    return done(null, withoutUrlPaths(e?.message ?? String(err), hostHeader).slice(0, 300));
  }
}
