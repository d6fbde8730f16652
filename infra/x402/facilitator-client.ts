/**
 * Calls an x402 facilitator over HTTP with the library's own `HTTPFacilitatorClient` (so the request bodies
 * are byte-for-byte what x402 resource servers send), always with an explicit URL — never the library's
 * public default — and a short deadline. Transport failures become our error data:
 *
 * - not sent (connection refused, DNS failure, TLS refused before the request): `UPSTREAM_UNAVAILABLE`,
 *   retryable, `details.reason "unreachable"`; the request never left, so this call settled nothing
 *   (`details.settlement "not_attempted"` for /settle).
 * - connection lost after it was open (reset, socket closed before the answer): `UPSTREAM_UNAVAILABLE`,
 *   retryable, `details.reason "connection_lost"`. The request may have been delivered and acted on: for
 *   /settle the outcome is unknown (`details.settlement "unknown"`), the transfer may be on chain.
 * - no answer within `timeoutMs` → `UPSTREAM_UNAVAILABLE`, retryable, `details.reason "timeout"`. For /settle
 *   the outcome is unknown (`details.settlement "unknown"`): the transfer may still land.
 * - a 5xx without a verify/settle body → `UPSTREAM_ERROR`, retryable (/settle: `settlement "unknown"`).
 * - a 2xx the schema refuses, a 4xx → `UPSTREAM_RESPONSE_INVALID` (/settle: `settlement "unknown"`: an answer
 *   we cannot read says nothing about what the facilitator did).
 * After an unknown settle, re-sending the same payload is safe — the token refuses a used EIP-3009 nonce — and
 * a fresh payload must not be signed until the first one's nonce is known unused and its `validBefore` passed.
 * A well-formed refusal (`isValid: false`, `success: false`) is returned, not thrown.
 */
import {
  FacilitatorResponseError,
  FacilitatorTimeoutError,
  HTTPFacilitatorClient,
} from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import { ActorError, fail } from "../../actors/runtime/errors.ts";

export interface FacilitatorClientOptions {
  /** Base URL of the facilitator (an allowlisted one in production). Required: there is no default. */
  url: string;
  /** Per-request deadline; default 5 000 ms. */
  timeoutMs?: number;
}

export interface X402FacilitatorClient {
  readonly url: string;
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  supported(): Promise<SupportedResponse>;
}

type Operation = "verify" | "settle" | "supported";

/**
 * Error codes that prove a request never left this process: the connection was never open (refused, no such
 * host) or TLS refused the peer before any byte of the request was written. Anything else thrown by fetch (a
 * reset, a socket closed before the answer, an abort) may come after the facilitator read the request.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ConnectionRefused",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "FailedToOpenSocket",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_HAS_EXPIRED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** True when `err` (thrown by fetch) proves the request was never sent. */
export function provesNotSent(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && NOT_SENT_CODES.has(code);
}

function toActorError(err: unknown, operation: Operation, url: string, timeoutMs: number): ActorError {
  if (err instanceof ActorError) return err;
  const base = { facilitator_url: url, operation };
  // Whatever went wrong after the request was sent, a /settle may have moved money.
  const unknownSettlement = operation === "settle" ? { settlement: "unknown" } : {};
  if (err instanceof FacilitatorTimeoutError) {
    return fail("UPSTREAM_UNAVAILABLE", `x402 facilitator did not answer ${operation} within ${timeoutMs} ms`, { ...base, reason: "timeout", ...unknownSettlement });
  }
  if (err instanceof FacilitatorResponseError) {
    return fail("UPSTREAM_RESPONSE_INVALID", `x402 facilitator ${operation} answer is invalid: ${err.message}`, { ...base, ...unknownSettlement });
  }
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  const httpFailure = /^Facilitator \w+ failed \((\d{3})\)/.exec(message);
  if (httpFailure) {
    const status = Number(httpFailure[1]);
    return status >= 500
      ? fail("UPSTREAM_ERROR", `x402 facilitator ${operation} failed with HTTP ${status}`, { ...base, status, ...unknownSettlement })
      : fail("UPSTREAM_RESPONSE_INVALID", `x402 facilitator refused the ${operation} request (HTTP ${status})`, {
          ...base,
          status,
          ...unknownSettlement,
        });
  }
  const cause = typeof code === "string" ? { cause: code } : {};
  if (provesNotSent(err)) {
    return fail("UPSTREAM_UNAVAILABLE", `x402 facilitator unreachable for ${operation}: ${message}`, {
      ...base,
      reason: "unreachable",
      ...cause,
      ...(operation === "settle" ? { settlement: "not_attempted" } : {}),
    });
  }
  // A reset or a socket closed before the answer: the facilitator may have read the request and acted on it
  // (payments audit B2 F1: a /settle dropped after forwarding had moved the money).
  return fail("UPSTREAM_UNAVAILABLE", `x402 facilitator connection lost during ${operation}: ${message}`, {
    ...base,
    reason: "connection_lost",
    ...cause,
    ...unknownSettlement,
  });
}

export function createFacilitatorClient(options: FacilitatorClientOptions): X402FacilitatorClient {
  const url = options.url.replace(/\/+$/, "");
  if (!/^https?:\/\//.test(url)) throw fail("INVALID_ARGUMENT", "facilitator url must be http(s)", { field: "facilitator_url" });
  const timeoutMs = options.timeoutMs ?? 5_000;
  const http = new HTTPFacilitatorClient({ url, timeoutMs });

  const guarded = async <T>(operation: Operation, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      throw toActorError(err, operation, url, timeoutMs);
    }
  };

  return {
    url,
    verify: (payload, requirements) =>
      guarded("verify", async () => {
        try {
          return await http.verify(payload, requirements);
        } catch (err) {
          // A non-2xx that still carries a verify body is a refusal, not a transport failure.
          if (err instanceof VerifyError) {
            return { isValid: false, invalidReason: err.invalidReason, invalidMessage: err.invalidMessage, payer: err.payer };
          }
          throw err;
        }
      }),
    settle: (payload, requirements) =>
      guarded("settle", async () => {
        try {
          return await http.settle(payload, requirements);
        } catch (err) {
          if (err instanceof SettleError) {
            return {
              success: false,
              errorReason: err.errorReason,
              errorMessage: err.errorMessage,
              payer: err.payer,
              transaction: err.transaction,
              network: err.network,
            };
          }
          throw err;
        }
      }),
    supported: () => guarded("supported", () => http.getSupported()),
  };
}
