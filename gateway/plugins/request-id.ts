/**
 * Every response carries X-Request-Id: the caller's own (when it is a sane token) or a fresh one. Applied by
 * the edge hook (gateway/plugins/edge.ts) so 404s and early refusals carry it too.
 *
 * Fresh ids need to be unique, not secret: a random 80-bit prefix per process plus a 48-bit counter, shaped like
 * a UUID (8-4-4-4-12 hex) so log tooling treats them alike, at a fraction of crypto.randomUUID's cost per request.
 */
import { REQUEST_ID } from "../../actors/runtime/envelope.ts";

const prefix = (() => {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`;
})();
/** "000".."fff": the counter's hex digits three at a time, without toString/padStart per id. */
const HEX3 = Array.from({ length: 4096 }, (_, i) => i.toString(16).padStart(3, "0"));
// The 48-bit counter as two 24-bit halves; the prefix plus the high half's six digits change once per 2^24 ids.
let low = 0;
let high = 0;
let head = prefix + "000000";

export function newRequestId(): string {
  if (++low === 0x1000000) {
    low = 0;
    high = (high + 1) & 0xffffff; // wraps with the whole counter at 2^48, as before
    head = prefix + HEX3[high >>> 12]! + HEX3[high & 0xfff]!;
  }
  return head + HEX3[low >>> 12]! + HEX3[low & 0xfff]!;
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
