/**
 * Every response carries X-Request-Id: the caller's own (when it is a sane token) or a fresh one. Applied by
 * the edge hook (gateway/plugins/edge.ts) so 404s and early refusals carry it too.
 *
 * Fresh ids are random UUIDs (crypto.randomUUID, v4: 122 random bits), opaque to the caller. They used to be a
 * per-process random prefix plus a visible 48-bit counter (cheaper by ~0.05–0.1 µs), which told any caller how many
 * requests a gateway answered between two of its own requests, when a gateway restarted and how many there are:
 * the business volume audit X-5 put behind METRICS_TOKEN (audit M-10, docs/decisions.md "Request ids are random").
 */
import { REQUEST_ID } from "../../actors/runtime/envelope.ts";

export function newRequestId(): string {
  return crypto.randomUUID();
}

/** The caller's id when it is a sane token, else a fresh one. */
export function requestIdFor(request: Request): string {
  const incoming = request.headers.get("x-request-id");
  return incoming && REQUEST_ID.test(incoming) ? incoming : newRequestId();
}

/** Sets the response's X-Request-Id and returns it. */
export function assignRequestId(request: Request, headers: Record<string, string | number>): string {
  return (headers["x-request-id"] = requestIdFor(request));
}
