/**
 * What the protocol bridges share: the bridged session record (`bridge_sessions`), `Idempotency-Key` semantics
 * (`bridge_idempotency`), and the cart calls every protocol maps onto. The bridges hold no business rules: they
 * translate a protocol's request into the same `cart/<id>` messages the REST and MCP checkouts send.
 */
import { createHash } from "node:crypto";
import { cartActor } from "../../actors/cart/index.ts";
import type { CartView, CompleteReply, PreviewView } from "../../actors/cart/messages.ts";
import { ActorError, ERROR_TABLE, fail } from "../../actors/runtime/errors.ts";
import type { Services } from "../services.ts";

export type BridgeProtocol = "acp" | "ucp" | "ap2";

export interface BridgeSession {
  id: string;
  protocol: BridgeProtocol;
  agentKeyId: string;
  cartId: string;
  meta: Record<string, unknown>;
  canceled: boolean;
}

export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export async function loadSession(svc: Services, protocol: BridgeProtocol, id: string, agentKeyId: string): Promise<BridgeSession> {
  // Postgres text cannot hold NUL: such an id names no session (and must not reach the query as a 500).
  if (id.includes("\u0000")) throw fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session.", { checkout_session_id: id.replace(/\u0000/g, "") });
  const [r] = await svc.sql<{ id: string; protocol: BridgeProtocol; agent_key_id: string; cart_id: string; meta: Record<string, unknown>; canceled_at: Date | null }[]>`
    SELECT id, protocol, agent_key_id, cart_id, meta, canceled_at FROM bridge_sessions WHERE id = ${id} AND protocol = ${protocol}`;
  // Another tenant's session is as good as none.
  if (!r || r.agent_key_id !== agentKeyId) throw fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session.", { checkout_session_id: id });
  return { id: r.id, protocol: r.protocol, agentKeyId: r.agent_key_id, cartId: r.cart_id, meta: r.meta, canceled: r.canceled_at !== null };
}

export async function saveSession(svc: Services, s: BridgeSession): Promise<void> {
  await svc.sql`
    INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id, meta, canceled_at)
    VALUES (${s.id}, ${s.protocol}, ${s.agentKeyId}, ${s.cartId}, ${svc.sql.json(s.meta as never)}, ${s.canceled ? new Date() : null})
    ON CONFLICT (id) DO UPDATE SET cart_id = EXCLUDED.cart_id, meta = EXCLUDED.meta,
      canceled_at = COALESCE(bridge_sessions.canceled_at, EXCLUDED.canceled_at), updated_at = now()`;
}

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash("sha256").update(JSON.stringify([method, path, body ?? null])).digest("hex");
}

/**
 * Runs `work` once per (protocol, agent, Idempotency-Key): the same key and the same request replay the first
 * answer (with `Idempotent-Replayed: true`); the same key with a different request is refused (409
 * IDEMPOTENCY_KEY_CONFLICT); a key whose first request is still running is 409 CHECKOUT_ALREADY_IN_PROGRESS. A
 * request that failed with a retryable error leaves no record, so the retry runs again.
 */
export async function withIdempotency(
  svc: Services,
  scope: { protocol: BridgeProtocol; agentKeyId: string; key: string | null; hash: string },
  work: () => Promise<Answer>,
): Promise<Answer> {
  if (!scope.key) return work();
  if (scope.key.length > 255) throw fail("INVALID_ARGUMENT", "Idempotency-Key is too long (max 255).", { field: "Idempotency-Key" });
  const claimed = await svc.sql<{ key: string }[]>`
    INSERT INTO bridge_idempotency (protocol, agent_key_id, key, request_hash) VALUES (${scope.protocol}, ${scope.agentKeyId}, ${scope.key}, ${scope.hash})
    ON CONFLICT DO NOTHING RETURNING key`;
  if (claimed.length === 0) {
    const [row] = await svc.sql<{ request_hash: string; status: number | null; response: unknown }[]>`
      SELECT request_hash, status, response FROM bridge_idempotency WHERE protocol = ${scope.protocol} AND agent_key_id = ${scope.agentKeyId} AND key = ${scope.key}`;
    if (!row || row.request_hash !== scope.hash) {
      throw fail("IDEMPOTENCY_KEY_CONFLICT", "This Idempotency-Key was used with a different request.", { field: "Idempotency-Key" });
    }
    if (row.status === null) throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "A request with this Idempotency-Key is still running; retry the same call.", {});
    const replayed: Answer = { status: row.status, body: row.response, headers: { "idempotent-replayed": "true" } };
    const refusal = replayedError(replayed);
    if (refusal) throw refusal;
    return replayed;
  }
  const forget = () => svc.sql`DELETE FROM bridge_idempotency WHERE protocol = ${scope.protocol} AND agent_key_id = ${scope.agentKeyId} AND key = ${scope.key}`;
  let answer: Answer;
  try {
    answer = await work();
  } catch (err) {
    if (err instanceof ActorError && !ERROR_TABLE[err.code].retryable) {
      const e = errorAnswerOf(err);
      await svc.sql`UPDATE bridge_idempotency SET status = ${e.status}, response = ${svc.sql.json({ __error: err.toData() } as never)}
        WHERE protocol = ${scope.protocol} AND agent_key_id = ${scope.agentKeyId} AND key = ${scope.key}`;
    } else await forget();
    throw err;
  }
  await svc.sql`UPDATE bridge_idempotency SET status = ${answer.status}, response = ${svc.sql.json(answer.body as never)}
    WHERE protocol = ${scope.protocol} AND agent_key_id = ${scope.agentKeyId} AND key = ${scope.key}`;
  return answer;
}

/** A stored refusal replays as the same error. */
export function replayedError(answer: Answer): ActorError | null {
  const b = answer.body as { __error?: { code: string; message: string; details?: Record<string, unknown> } } | null;
  return b && typeof b === "object" && b.__error ? ActorError.fromData(b.__error as never) : null;
}

function errorAnswerOf(err: ActorError): { status: number } {
  return { status: ERROR_TABLE[err.code].http };
}

// ------------------------------------------------------------------------------------------------ cart calls

export interface ItemInput {
  productId: string;
  quantity: number;
}

export async function createCart(svc: Services, keyId: string, items: ItemInput[]): Promise<{ cart: CartView; preview: PreviewView }> {
  const cartId = crypto.randomUUID();
  const cart = await svc.actors.ask(cartActor, cartId, "create", { keyId, items: items.map((i) => ({ productId: i.productId.toLowerCase(), quantity: i.quantity })) });
  const preview = await svc.actors.ask(cartActor, cartId, "preview", { keyId });
  return { cart, preview };
}

export function getCart(svc: Services, keyId: string, cartId: string): Promise<CartView> {
  return svc.actors.ask(cartActor, cartId, "get", { keyId });
}

/** The one-call checkout on the cart with a card-rail token (a sandbox test token or MOCK). */
export function completeCart(svc: Services, keyId: string, cartId: string, opts: { paymentMethod?: string; idempotencyKey: string }): Promise<CompleteReply> {
  return svc.actors.ask(cartActor, cartId, "checkout", {
    keyId,
    rail: "card",
    idempotencyKey: opts.idempotencyKey,
    ...(opts.paymentMethod ? { paymentMethod: opts.paymentMethod } : {}),
  });
}

/** A UUID v4 derived from a string (the cart's idempotency key for a protocol's own session or key). */
export function derivedUuidV4(seed: string): string {
  const h = createHash("sha256").update(seed).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export function asRecord(v: unknown): Record<string, unknown> {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
