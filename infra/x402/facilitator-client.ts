/**
 * Calls an x402 facilitator over HTTP: POST /verify and /settle, GET /supported. The request bodies are byte-for-byte
 * what @x402/core's `HTTPFacilitatorClient` sends (`{x402Version, paymentPayload, paymentRequirements}`, bigints as
 * strings, `Content-Type: application/json`; test/x402/facilitator-client-vetted.test.ts compares them with the
 * library's), and the answers are checked with the library's own schemas (rebuilt here with its zod: they are not
 * exported). The library's client itself is not used since audit B-3 (session 17): it fetches by name with
 * `redirect: "follow"` (a 307 keeps the POST and the payer's signed authorization) and reads the whole body, and its
 * errors quote the facilitator's answer. So every request here:
 *
 * - goes through the SSRF guard first (`assertPublicUrl`, per request) and then `fetchVetted` to the addresses the guard
 *   vetted (the name is resolved once, by the guard; no second lookup a rebinding DNS answer could steer; the next
 *   address only while no connection was ever established, so never a /settle sent twice). Private and
 *   loopback addresses only with `allowPrivate` (ALLOW_PRIVATE_URLS, never in production, or a URL the operator's
 *   X402_FACILITATOR_ALLOWLIST names: x402-config.ts `facilitatorMayBePrivate`). A URL the guard refuses is
 *   `STORE_NOT_CONFIGURED` (`reason "facilitator_not_public"`; /settle: `settlement "not_attempted"`), nothing sent;
 *   a name that does not resolve is `UPSTREAM_UNAVAILABLE` `reason "unreachable"` like a refused connection.
 * - never follows a redirect: a 3xx is `UPSTREAM_RESPONSE_INVALID` (`reason "redirect"`, /settle: `settlement
 *   "unknown"`), nothing sent to its Location.
 * - reads at most FACILITATOR_MAX_RESPONSE_BYTES of the answer (`readBoundedText`; reading stops there).
 * - never puts the facilitator's text in the error: the agent gets a code, the HTTP status and our own `reason`; the
 *   text goes to a debug log line, cut to FACILITATOR_TEXT_LOG_CHARS (the rule of review RX-4 for refusal reasons).
 *
 * Always an explicit URL (there is no default facilitator) and a short deadline covering the whole exchange: the name's
 * lookup (itself at most FACILITATOR_LOOKUP_MS), headers and body. Transport failures become our error data:
 *
 * - not sent (connection refused, DNS failure or a lookup past its bound, TLS refused before the request): `UPSTREAM_UNAVAILABLE`,
 *   retryable, `details.reason "unreachable"`; the request never left, so this call settled nothing
 *   (`details.settlement "not_attempted"` for /settle).
 * - connection lost after it was open (reset, socket closed before the answer): `UPSTREAM_UNAVAILABLE`,
 *   retryable, `details.reason "connection_lost"`. The request may have been delivered and acted on: for
 *   /settle the outcome is unknown (`details.settlement "unknown"`), the transfer may be on chain.
 * - no answer within `timeoutMs` → `UPSTREAM_UNAVAILABLE`, retryable, `details.reason "timeout"`. For /settle
 *   the outcome is unknown (`details.settlement "unknown"`): the transfer may still land.
 * - a 5xx without a verify/settle body → `UPSTREAM_ERROR`, retryable (/settle: `settlement "unknown"`).
 * - a 2xx the schema refuses (or not JSON, too long, undecodable), a 3xx, a 4xx → `UPSTREAM_RESPONSE_INVALID`
 *   (/settle: `settlement "unknown"`: an answer we cannot read says nothing about what the facilitator did).
 * After an unknown settle, re-sending the same payload is safe — the token refuses a used EIP-3009 nonce — and
 * a fresh payload must not be signed until the first one's nonce is known unused and its `validBefore` passed.
 * A well-formed refusal (`isValid: false`, `success: false`, also on a non-2xx that carries such a body, as the
 * library's VerifyError / SettleError) is returned, not thrown.
 */
import { z } from "@x402/core/schemas";
import type { Network, PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from "@x402/core/types";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import type { Logger } from "../log.ts";
import { discardBody, fetchVetted, neverConnected, readBoundedText, ResponseTooLargeError, ResponseUndecodableError } from "../outbound-http.ts";
import { assertPublicUrl, type Resolver, type VettedUrl } from "../ssrf.ts";

export interface FacilitatorClientOptions {
  /** Base URL of the facilitator (an allowlisted one in production). Required: there is no default. */
  url: string;
  /** Per-request deadline, headers and body; default 5 000 ms. */
  timeoutMs?: number;
  /**
   * Whether a private or loopback address may be called (ALLOW_PRIVATE_URLS, never in production, or a URL on the
   * operator's allowlist: `facilitatorMayBePrivate` in actors/payments/x402-config.ts). The payment paths always pass
   * it; the default (true) serves tests that call a local facilitator directly. Unspecified, multicast, broadcast and
   * reserved addresses are refused either way, and redirects are never followed.
   */
  allowPrivate?: boolean;
  /** DNS resolver for the SSRF guard (tests); default the system's. */
  resolve?: Resolver;
  /** For the debug line carrying the facilitator's text (never the agent's answer). */
  log?: Logger;
}

export interface X402FacilitatorClient {
  readonly url: string;
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  supported(): Promise<SupportedResponse>;
}

type Operation = "verify" | "settle" | "supported";

/** The most of a facilitator answer read (a verify or settle answer is a few hundred bytes, @x402/evm's ~1.5 KB). */
export const FACILITATOR_MAX_RESPONSE_BYTES = 64 * 1024;
/** How much of a facilitator's own text a debug log line keeps (the rail's refusal lines keep as much). */
export const FACILITATOR_TEXT_LOG_CHARS = 300;
/**
 * The longest the facilitator's name lookup may take, within the request's deadline (the smaller of the two): a name
 * not resolved by then is `unreachable`, nothing sent (review Y-1, session 17: the lookup ran before the deadline
 * started, for as long as the resolver liked, with a /settle's intent in `settling`).
 */
export const FACILITATOR_LOOKUP_MS = 2_000;

// The library's answer schemas (@x402/core 2.27, src/http/httpFacilitatorClient.ts), not exported by it: the same
// zod checks with its own zod.
const optionalString = z
  .string()
  .nullish()
  .transform((v) => v ?? undefined);
const optionalRecord = z
  .record(z.string(), z.unknown())
  .nullish()
  .transform((v) => v ?? undefined);
const verifyResponseSchema = z.object({
  isValid: z.boolean(),
  invalidReason: optionalString,
  invalidMessage: optionalString,
  payer: optionalString,
  extensions: optionalRecord,
  extra: optionalRecord,
});
const settleResponseSchema = z.object({
  success: z.boolean(),
  errorReason: optionalString,
  errorMessage: optionalString,
  payer: optionalString,
  transaction: z.string(),
  network: z.custom<Network>((value) => typeof value === "string"),
  amount: optionalString,
  extensions: optionalRecord,
  extra: optionalRecord,
});
const supportedResponseSchema = z.object({
  kinds: z.array(
    z.object({
      x402Version: z.number(),
      scheme: z.string(),
      network: z.custom<Network>((value) => typeof value === "string"),
      extra: optionalRecord,
    }),
  ),
  extensions: z.array(z.string()).default([]),
  signers: z.record(z.string(), z.array(z.string())).default({}),
});

/**
 * Error codes that prove a request never left this process, beside a connection never established (refused, no
 * route: `neverConnected`, infra/outbound-http.ts, the one list fetchVetted also uses to try the next address): no
 * such host, or TLS refused the peer before any byte of the request was written. Anything else thrown by fetch (a
 * reset, a socket closed before the answer, an abort) may come after the facilitator read the request.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_HAS_EXPIRED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** True when `err` (thrown by fetch) proves the request was never sent. */
export function provesNotSent(err: unknown): boolean {
  if (neverConnected(err)) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && NOT_SENT_CODES.has(code);
}

/** The library's `toJsonSafe`: a JSON copy with bigints as decimal strings. */
function toJsonSafe(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
}

/** The request body the library sends to /verify and /settle, byte for byte. */
export function facilitatorRequestBody(payload: PaymentPayload, requirements: PaymentRequirements): string {
  return JSON.stringify({
    x402Version: payload.x402Version,
    paymentPayload: toJsonSafe(payload),
    paymentRequirements: toJsonSafe(requirements),
  });
}

/** A string field of a refusal body, or undefined (a number or an object there is not passed on). */
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The facilitator's answer, as far as we got with it. */
type Answer = { status: number; text: string | null };

export function createFacilitatorClient(options: FacilitatorClientOptions): X402FacilitatorClient {
  const url = options.url.replace(/\/+$/, "");
  if (!/^https?:\/\//.test(url)) throw fail("INVALID_ARGUMENT", "facilitator url must be http(s)", { field: "facilitator_url" });
  const timeoutMs = options.timeoutMs ?? 5_000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive integer number of milliseconds, got ${timeoutMs}`);
  const allowPrivate = options.allowPrivate ?? true;
  const log = options.log;

  const base = (operation: Operation) => ({ facilitator_url: url, operation });
  // Whatever went wrong after the request was sent, a /settle may have moved money.
  const unknownSettlement = (operation: Operation) => (operation === "settle" ? { settlement: "unknown" } : {});

  /** The facilitator's text goes here only: a debug line, cut short. */
  const logText = (operation: Operation, status: number, what: string, text: string | null) => {
    log?.debug("x402 facilitator answer not used", { facilitatorUrl: url, operation, status, what, text: text?.slice(0, FACILITATOR_TEXT_LOG_CHARS) });
  };

  /** An answer we cannot use: our words, the status and our reason, never the facilitator's text. */
  const invalid = (operation: Operation, status: number | null, reason: string, sentence: string): ActorError =>
    fail("UPSTREAM_RESPONSE_INVALID", `x402 facilitator ${operation} answer ${sentence}`, {
      ...base(operation),
      ...(status === null ? {} : { status }),
      reason,
      ...unknownSettlement(operation),
    });

  /** A non-2xx without a verify/settle body. */
  const httpFailure = (operation: Operation, status: number): ActorError =>
    status >= 500
      ? fail("UPSTREAM_ERROR", `x402 facilitator ${operation} failed with HTTP ${status}`, { ...base(operation), status, ...unknownSettlement(operation) })
      : fail("UPSTREAM_RESPONSE_INVALID", `x402 facilitator refused the ${operation} request (HTTP ${status})`, { ...base(operation), status, ...unknownSettlement(operation) });

  /** fetch failed, or reading the answer did: not sent, lost, or out of time. */
  const transportFailure = (err: unknown, operation: Operation, timedOut: boolean): ActorError => {
    if (err instanceof ActorError) return err;
    if (timedOut) {
      return fail("UPSTREAM_UNAVAILABLE", `x402 facilitator did not answer ${operation} within ${timeoutMs} ms`, { ...base(operation), reason: "timeout", ...unknownSettlement(operation) });
    }
    const message = err instanceof Error ? err.message : String(err);
    const code = (err as { code?: unknown } | null)?.code;
    const cause = typeof code === "string" ? { cause: code } : {};
    if (provesNotSent(err)) {
      return fail("UPSTREAM_UNAVAILABLE", `x402 facilitator unreachable for ${operation}: ${message}`, {
        ...base(operation),
        reason: "unreachable",
        ...cause,
        ...(operation === "settle" ? { settlement: "not_attempted" } : {}),
      });
    }
    // A reset or a socket closed before the answer: the facilitator may have read the request and acted on it
    // (payments audit B2 F1: a /settle dropped after forwarding had moved the money).
    return fail("UPSTREAM_UNAVAILABLE", `x402 facilitator connection lost during ${operation}: ${message}`, {
      ...base(operation),
      reason: "connection_lost",
      ...cause,
      ...unknownSettlement(operation),
    });
  };

  const lookupMs = Math.min(FACILITATOR_LOOKUP_MS, timeoutMs);
  /** Nothing was sent: the name did not resolve, or not in time. */
  const notResolved = (operation: Operation, timedOut: boolean): ActorError =>
    fail(
      "UPSTREAM_UNAVAILABLE",
      `x402 facilitator unreachable for ${operation}: its host name ${timedOut ? `did not resolve within ${lookupMs} ms` : "does not resolve"}`,
      { ...base(operation), reason: "unreachable", cause: timedOut ? "lookup_timeout" : "ENOTFOUND", ...(operation === "settle" ? { settlement: "not_attempted" } : {}) },
    );

  /** The guard, per request, its lookup bounded: the address to connect to, or our refusal (nothing sent). */
  const vet = async (operation: Operation, path: string): Promise<VettedUrl> => {
    try {
      return await assertPublicUrl(`${url}${path}`, { allowPrivate, field: "facilitator_url", lookupTimeoutMs: lookupMs, ...(options.resolve ? { resolve: options.resolve } : {}) });
    } catch (err) {
      if (!(err instanceof ActorError)) throw err;
      const notSent = operation === "settle" ? { settlement: "not_attempted" } : {};
      if (err.details?.reason === "unresolvable") throw notResolved(operation, err.details?.lookup === "timeout");
      throw fail("STORE_NOT_CONFIGURED", `x402 facilitator URL is not allowed for ${operation}: it must be a public https address`, {
        ...base(operation),
        reason: "facilitator_not_public",
        ...notSent,
      });
    }
  };

  /**
   * One exchange within one deadline: the guard (its lookup included), the request to the vetted address, the status
   * and the body (bounded; null when it could not be read as an answer: too long, undecodable). A 3xx is refused here,
   * its body dropped.
   */
  const exchange = async (operation: Operation, path: string, init: { method: "GET" | "POST"; body?: string }): Promise<Answer> => {
    const deadline = AbortSignal.timeout(timeoutMs);
    const vetted = await vet(operation, path);
    // The lookup used the whole deadline: nothing was sent, and nothing will be.
    if (deadline.aborted) throw notResolved(operation, true);
    const controller = new AbortController();
    const onDeadline = () => controller.abort(deadline.reason);
    deadline.addEventListener("abort", onDeadline, { once: true });
    try {
      let res: Response;
      try {
        // fetchVetted's own deadline is a backstop: ours decides, and says it was the deadline
        res = await fetchVetted(vetted, { method: init.method, headers: { "Content-Type": "application/json" }, body: init.body, timeoutMs: timeoutMs + 1_000, controller });
      } catch (err) {
        if (err instanceof ResponseUndecodableError) throw invalid(operation, null, "undecodable", "does not decode as its Content-Encoding says");
        throw transportFailure(err, operation, deadline.aborted);
      }
      if (res.status >= 300 && res.status < 400) {
        await discardBody(res, controller);
        logText(operation, res.status, "redirect, not followed", res.headers.get("location"));
        throw invalid(operation, res.status, "redirect", `is a redirect (HTTP ${res.status}), which is not followed`);
      }
      try {
        return { status: res.status, text: await readBoundedText(res, FACILITATOR_MAX_RESPONSE_BYTES, controller) };
      } catch (err) {
        if (err instanceof ResponseTooLargeError) {
          if (res.ok) throw invalid(operation, res.status, "too_large", `is longer than ${FACILITATOR_MAX_RESPONSE_BYTES} bytes`);
          return { status: res.status, text: null };
        }
        if (err instanceof ResponseUndecodableError) {
          if (res.ok) throw invalid(operation, res.status, "undecodable", "does not decode as its Content-Encoding says");
          return { status: res.status, text: null };
        }
        throw transportFailure(err, operation, deadline.aborted);
      }
    } finally {
      deadline.removeEventListener("abort", onDeadline);
    }
  };

  /** A 2xx's body through the schema; anything else is UPSTREAM_RESPONSE_INVALID, its text to the debug line only. */
  const parse = <S extends z.ZodTypeAny>(operation: Operation, answer: Answer, schema: S): z.output<S> => {
    let data: unknown;
    try {
      data = JSON.parse(answer.text ?? "");
    } catch {
      logText(operation, answer.status, "not JSON", answer.text);
      throw invalid(operation, answer.status, "invalid_json", "is not JSON");
    }
    const parsed = schema.safeParse(data);
    if (!parsed.success) {
      logText(operation, answer.status, `not a ${operation} answer`, answer.text);
      throw invalid(operation, answer.status, "schema", `is not a ${operation} answer`);
    }
    return parsed.data;
  };

  /** A non-2xx's body as JSON when it is an object, else null (its text to the debug line). */
  const errorBody = (operation: Operation, answer: Answer): Record<string, unknown> | null => {
    let data: unknown = null;
    try {
      data = answer.text === null ? null : JSON.parse(answer.text);
    } catch {
      data = null;
    }
    if (typeof data === "object" && data !== null && !Array.isArray(data)) return data as Record<string, unknown>;
    logText(operation, answer.status, "HTTP failure", answer.text);
    return null;
  };

  const post = (operation: "verify" | "settle", payload: PaymentPayload, requirements: PaymentRequirements) =>
    exchange(operation, `/${operation}`, { method: "POST", body: facilitatorRequestBody(payload, requirements) });

  return {
    url,
    async verify(payload, requirements) {
      const answer = await post("verify", payload, requirements);
      if (answer.status >= 200 && answer.status < 300) return parse("verify", answer, verifyResponseSchema) as VerifyResponse;
      const data = errorBody("verify", answer);
      // A non-2xx that still carries a verify body is a refusal, not a transport failure (the library's VerifyError).
      if (data && "isValid" in data) return { isValid: false, invalidReason: str(data.invalidReason), invalidMessage: str(data.invalidMessage), payer: str(data.payer) };
      if (data) logText("verify", answer.status, "HTTP failure", answer.text);
      throw httpFailure("verify", answer.status);
    },
    async settle(payload, requirements) {
      const answer = await post("settle", payload, requirements);
      if (answer.status >= 200 && answer.status < 300) return parse("settle", answer, settleResponseSchema) as SettleResponse;
      const data = errorBody("settle", answer);
      // The library's SettleError: a refusal, returned (its fields as strings only).
      if (data && "success" in data) {
        return {
          success: false,
          errorReason: str(data.errorReason),
          errorMessage: str(data.errorMessage),
          payer: str(data.payer),
          transaction: str(data.transaction) as string,
          network: str(data.network) as Network,
        };
      }
      if (data) logText("settle", answer.status, "HTTP failure", answer.text);
      throw httpFailure("settle", answer.status);
    },
    async supported() {
      const answer = await exchange("supported", "/supported", { method: "GET" });
      if (answer.status >= 200 && answer.status < 300) return parse("supported", answer, supportedResponseSchema) as SupportedResponse;
      errorBody("supported", answer);
      throw httpFailure("supported", answer.status);
    },
  };
}
