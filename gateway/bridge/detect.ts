/**
 * Which agent-payment protocol a request speaks: the `x-protocol` header first (acp, ucp, ap2; a few common
 * spellings), else the body's shape. null = our own InitiateCheckoutRequest.
 */
import type { BridgeProtocol } from "./common.ts";
import { asRecord } from "./common.ts";

const HEADER_NAMES: Record<string, BridgeProtocol> = {
  acp: "acp",
  "agentic-commerce": "acp",
  "agentic-commerce-protocol": "acp",
  ucp: "ucp",
  "universal-commerce": "ucp",
  ap2: "ap2",
  "agent-payments": "ap2",
};

export function detectProtocol(headers: Headers, body: unknown): BridgeProtocol | null {
  const h = headers.get("x-protocol")?.trim().toLowerCase();
  if (h && HEADER_NAMES[h]) return HEADER_NAMES[h];
  const b = asRecord(body);
  if ("payment_mandate" in b || "intent_mandate" in b || "cart_mandate" in b) return "ap2";
  // ACP 2026-04-17 names its items `line_items` too, as flat `{id}` entries (UCP's are `{item: {id}, quantity}`): the
  // entries' shape decides first, the API-Version header only when they do not (acpLineItems)
  if (Array.isArray(b.line_items)) return acpLineItems(headers, b.line_items) ? "acp" : "ucp";
  if (Array.isArray(b.items) && !("cartId" in b) && ("buyer" in b || "fulfillment_address" in b || "payment_data" in b || b.items.some((i) => "id" in asRecord(i)))) return "acp";
  return null;
}

/**
 * An ACP 2026-04-17 `line_items` list. An entry with UCP's `item` member is UCP's whatever the headers say (review
 * R1-2: a client whose HTTP stack sends `API-Version` on every request may speak UCP too); else every entry is a flat
 * `{id}`, or the request names an ACP API version (a list neither protocol's shape, then refused in ACP's words).
 */
function acpLineItems(headers: Headers, items: unknown[]): boolean {
  if (items.some((i) => "item" in asRecord(i))) return false;
  if (headers.has("api-version")) return true;
  return items.length > 0 && items.every((i) => typeof asRecord(i).id === "string");
}

/** Is `x-protocol` set to something we do not bridge? (answered 400 rather than silently treated as ours) */
export function unknownProtocolHeader(headers: Headers): string | null {
  const h = headers.get("x-protocol")?.trim().toLowerCase();
  return h && !HEADER_NAMES[h] && h !== "x402" && h !== "native" ? h : null;
}

// POST /api/v1/agent/checkout validates its body as an InitiateCheckoutRequest; a request in another protocol's
// shape is taken aside before that validation (Elysia `transform`) and handed to the bridge by the handler.
const bridged = new WeakMap<Request, { protocol: BridgeProtocol; body: unknown }>();
/** Stands in for a bridged body during validation; never reaches a cart. */
export const BRIDGED_PLACEHOLDER = Object.freeze({ cartId: "00000000-0000-4000-8000-000000000000" });

/** For the checkout route's `transform`: true (and the body set aside) when the request is another protocol's. */
export function setAsideBridged(request: Request, body: unknown): boolean {
  const protocol = detectProtocol(request.headers, body);
  if (!protocol) return false;
  bridged.set(request, { protocol, body });
  return true;
}

export function bridgedRequest(request: Request): { protocol: BridgeProtocol; body: unknown } | undefined {
  return bridged.get(request);
}
