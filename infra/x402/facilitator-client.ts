/**
 * Calls an x402 facilitator over HTTP with the library's own `HTTPFacilitatorClient` (so the request bodies
 * are byte-for-byte what x402 resource servers send), always with an explicit URL — never the library's
 * public default — and a short deadline. Transport failures become our error data:
 *
 * - unreachable (connection refused, DNS, reset) → `UPSTREAM_UNAVAILABLE`, retryable, `details.reason
 *   "unreachable"`; nothing reached the facilitator, so nothing settled.
 * - no answer within `timeoutMs` → `UPSTREAM_UNAVAILABLE`, retryable, `details.reason "timeout"`. For /settle
 *   the outcome is unknown (`details.settlement "unknown"`): the transfer may still land. Re-sending the
 *   same payload is safe — the token refuses a used EIP-3009 nonce — and a fresh payload must not be signed
 *   until the first one's nonce is known to be unused or its `validBefore` has passed.
 * - a 5xx without a verify/settle body → `UPSTREAM_ERROR`, retryable.
 * - a 2xx the schema refuses → `UPSTREAM_RESPONSE_INVALID`.
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

function toActorError(err: unknown, operation: Operation, url: string, timeoutMs: number): ActorError {
  if (err instanceof ActorError) return err;
  const base = { facilitator_url: url, operation };
  if (err instanceof FacilitatorTimeoutError) {
    return fail(
      "UPSTREAM_UNAVAILABLE",
      `x402 facilitator did not answer ${operation} within ${timeoutMs} ms`,
      operation === "settle" ? { ...base, reason: "timeout", settlement: "unknown" } : { ...base, reason: "timeout" },
    );
  }
  if (err instanceof FacilitatorResponseError) {
    return fail("UPSTREAM_RESPONSE_INVALID", `x402 facilitator ${operation} answer is invalid: ${err.message}`, base);
  }
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  const httpFailure = /^Facilitator \w+ failed \((\d{3})\)/.exec(message);
  if (httpFailure) {
    const status = Number(httpFailure[1]);
    return status >= 500
      ? fail("UPSTREAM_ERROR", `x402 facilitator ${operation} failed with HTTP ${status}`, { ...base, status })
      : fail("UPSTREAM_RESPONSE_INVALID", `x402 facilitator refused the ${operation} request (HTTP ${status})`, {
          ...base,
          status,
        });
  }
  // Anything else thrown by fetch is a transport failure: the request never got an answer.
  return fail("UPSTREAM_UNAVAILABLE", `x402 facilitator unreachable for ${operation}: ${message}`, {
    ...base,
    reason: "unreachable",
    ...(typeof code === "string" ? { cause: code } : {}),
    ...(operation === "settle" ? { settlement: "not_attempted" } : {}),
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
