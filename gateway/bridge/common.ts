/**
 * What the protocol bridges share: the bridged session record (`bridge_sessions`), `Idempotency-Key` semantics
 * (`bridge_idempotency`), and the cart calls every protocol maps onto. The bridges hold no business rules: they
 * translate a protocol's request into the same `cart/<id>` messages the REST and MCP checkouts send.
 */
import { createHash } from "node:crypto";
import { cartActor } from "../../actors/cart/index.ts";
import { MAX_CART_LINES, PAYMENT_TOKEN_MAX_LENGTH, type CartItemInput, type CartView, type CompleteReply, type PaymentLimitsInput } from "../../actors/cart/messages.ts";
import { mergedLineTooLarge } from "../../actors/cart/cart-machine.ts";
import { ActorError, ERROR_TABLE, fail } from "../../actors/runtime/errors.ts";
import { UUID_HEX, uuidV4FromHex } from "../../infra/uuid.ts";
import { isObjectRecord } from "../plugins/json-body.ts";
import type { Services } from "../services.ts";
import { claimMandate } from "./ap2-auth.ts";

export type BridgeProtocol = "acp" | "ucp" | "ap2";

export interface BridgeSession {
  id: string;
  protocol: BridgeProtocol;
  agentKeyId: string;
  cartId: string;
  meta: Record<string, unknown>;
  canceled: boolean;
  /** The claim this request holds on the session's row (`withSessionClaim`); absent for a session being created. */
  claim?: string;
}

export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

type SessionRow = { id: string; protocol: BridgeProtocol; agent_key_id: string; cart_id: string; meta: Record<string, unknown>; canceled_at: Date | null };

const sessionOf = (r: SessionRow): BridgeSession => ({ id: r.id, protocol: r.protocol, agentKeyId: r.agent_key_id, cartId: r.cart_id, meta: r.meta, canceled: r.canceled_at !== null });

/** A session id that names no session this agent key can see. */
function sessionNotFound(id: string): ActorError {
  return fail("CHECKOUT_SESSION_NOT_FOUND", "No such checkout session.", { checkout_session_id: id });
}

/** Postgres text cannot hold NUL: such an id names no session (and must not reach a query as a 500). */
function assertSessionIdStorable(id: string): void {
  if (id.includes("\u0000")) throw sessionNotFound(id.replace(/\u0000/g, ""));
}

export async function loadSession(svc: Services, protocol: BridgeProtocol, id: string, agentKeyId: string): Promise<BridgeSession> {
  assertSessionIdStorable(id);
  const [r] = await svc.sql<SessionRow[]>`
    SELECT id, protocol, agent_key_id, cart_id, meta, canceled_at FROM bridge_sessions WHERE id = ${id} AND protocol = ${protocol}`;
  // Another tenant's session is as good as none.
  if (!r || r.agent_key_id !== agentKeyId) throw sessionNotFound(id);
  return sessionOf(r);
}

/**
 * Writes the session. A new session (no claim) is inserted; a claimed one is written only while this request still
 * holds its claim: false when the claim was taken over after its lease ran out (nothing written).
 */
export async function saveSession(svc: Services, s: BridgeSession): Promise<boolean> {
  if (!s.claim) {
    await svc.sql`
      INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id, meta, canceled_at)
      VALUES (${s.id}, ${s.protocol}, ${s.agentKeyId}, ${s.cartId}, ${svc.sql.json(s.meta as never)}, ${s.canceled ? new Date() : null})
      ON CONFLICT (id) DO UPDATE SET cart_id = EXCLUDED.cart_id, meta = EXCLUDED.meta,
        canceled_at = COALESCE(bridge_sessions.canceled_at, EXCLUDED.canceled_at), updated_at = now()`;
    return true;
  }
  const saved = await svc.sql<{ id: string }[]>`
    UPDATE bridge_sessions SET cart_id = ${s.cartId}, meta = ${svc.sql.json(s.meta as never)},
      canceled_at = COALESCE(canceled_at, ${s.canceled ? new Date() : null}), updated_at = now()
    WHERE id = ${s.id} AND claim_id = ${s.claim} RETURNING id`;
  return saved.length > 0;
}

/**
 * A read's save of the destination it took from the session's cart (shipping.ts `followCartDestination`): only the
 * members it changed (`shipping`, and for ACP `fulfillment_address` and the dropped `fulfillment_option_id`), only
 * while the session's shipping is still `before` (a write that changed it meanwhile wins) and no other request holds
 * the session (reads take no claim; a write holding it saves its own meta). False when nothing was written: the next
 * read notices the change again and quotes it again, which is all a lost save costs.
 */
export async function saveFollowedShipping(svc: Services, s: BridgeSession, before: unknown): Promise<boolean> {
  const patch: Record<string, unknown> = { shipping: s.meta.shipping };
  if (s.protocol === "acp") patch.fulfillment_address = s.meta.fulfillment_address ?? null;
  const saved = await svc.sql<{ id: string }[]>`
    UPDATE bridge_sessions SET meta = (meta - 'fulfillment_option_id'::text) || ${svc.sql.json(patch as never)}::jsonb, updated_at = now()
    WHERE id = ${s.id} AND meta->'shipping' IS NOT DISTINCT FROM ${before === undefined ? null : svc.sql.json(before as never)}::jsonb
      AND (claim_id IS NULL OR claimed_until < now() OR claim_id = ${s.claim ?? null})
    RETURNING id`;
  return saved.length > 0;
}

/**
 * Runs one write (update, complete, cancel) on an ACP/UCP session while holding the session's row (audit Y4).
 * Without it, an update and a complete both loaded the row, did their cart work and saved it back, the last save
 * winning: an update answered 200 with new items that were then dropped, or a paid session ended up pointing at a
 * new, unpaid cart whose next complete charged again. The claim is a compare-and-set on `claim_id` (migration 0073),
 * taken before any cart work and given back afterwards; another write meanwhile is 409 CHECKOUT_ALREADY_IN_PROGRESS
 * (retryable: the same call again once this one is done). It is a lease of BRIDGE_IDEMPOTENCY_LEASE_MS (a request
 * makes at most a few sequential actor asks, each bounded by ACTOR_ASK_TIMEOUT_MS), so a request that died holding
 * it blocks the session only until it runs out; no database connection is held across the cart work. Reads take no
 * claim: they show the cart's live state.
 *
 * `countComplete`: a complete's claim also counts it on the session (`meta.completes`, in the same statement: review
 * R-2), before any cart work, so the count is never less than the completes the session sent to its carts. Only a
 * session that has the count (created since) is counted: an older one stays without it (index.ts
 * `mayPassOwnIntentAttempts`).
 */
export async function withSessionClaim<T>(
  svc: Services,
  protocol: BridgeProtocol,
  id: string,
  agentKeyId: string,
  work: (s: BridgeSession) => Promise<T>,
  opts: { countComplete?: boolean } = {},
): Promise<T> {
  assertSessionIdStorable(id);
  const claim = crypto.randomUUID();
  const counted = opts.countComplete
    ? svc.sql`, meta = CASE WHEN jsonb_typeof(meta->'completes') = 'number' THEN jsonb_set(meta, '{completes}', to_jsonb((meta->>'completes')::bigint + 1)) ELSE meta END`
    : svc.sql``;
  // The claim returns the row it claims, so the session is read once. Only a refused claim reads the row, to answer
  // a session that is not this key's (or none) with a read's 404 (loadSession throws it) rather than the busy 409.
  const [r] = await svc.sql<SessionRow[]>`
    UPDATE bridge_sessions SET claim_id = ${claim}, claimed_until = now() + ${svc.config.BRIDGE_IDEMPOTENCY_LEASE_MS} * interval '1 millisecond'${counted}
    WHERE id = ${id} AND protocol = ${protocol} AND agent_key_id = ${agentKeyId} AND (claimed_until IS NULL OR claimed_until < now())
    RETURNING id, protocol, agent_key_id, cart_id, meta, canceled_at`;
  if (!r) {
    await loadSession(svc, protocol, id, agentKeyId);
    throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "Another request on this checkout session is running; retry the call once it has finished.", {
      checkout_session_id: id,
      reason: "session_busy",
    });
  }
  try {
    return await work({ ...sessionOf(r), claim });
  } finally {
    await svc.sql`UPDATE bridge_sessions SET claim_id = NULL, claimed_until = NULL WHERE id = ${id} AND claim_id = ${claim}`.catch((err: unknown) => {
      svc.log.warn("bridge session claim not given back; it holds until its lease runs out", { protocol, error: err instanceof Error ? err.message : String(err) });
    });
  }
}

/** The id of an agent key's `ap2` binding of a mandate id (one per agent key and mandate id). */
export function ap2BindingId(agentKeyId: string, mandateId: string): string {
  return `ap2_${createHash("sha256").update(JSON.stringify([agentKeyId, mandateId])).digest("hex").slice(0, 32)}`;
}

/**
 * Binds an AP2 payment mandate (signed by `signer`, its user key's thumbprint) to the cart it is first presented for and returns the cart it is bound to. The user's
 * signature covers the mandate's contents, not the request's `cart_id`: without this, one signed mandate would pay
 * every cart of the agent inside its limits. Kept as an `ap2` bridge session (id from agent key and mandate id); the
 * first writer wins a race. Per agent key is enough because the same transaction claims the mandate for this agent
 * key across every key and account (ap2-auth.ts `claimMandate`, audit V1): the claim is taken only here, where the
 * payment goes ahead (the cart was found and is inside the limits; review RV-3), and a mandate another key holds is
 * 403 with nothing bound. A mandate already bound to another cart claims nothing (index.ts refuses it).
 *
 * `until` (ms; null: no expiry) is the last instant this presentation could be accepted for a cart not yet paid (the
 * first of its signed expiries); the binding records it (`mandate_expires_at`, 'infinity' for none; migration 0087)
 * and the retention job deletes the binding a grace after it. Every presentation that gets here moves it later if its
 * own is later (the user signed the same mandate id again), never earlier; a binding recorded before 0087 (NULL) stays
 * unrecorded, kept for ever. The upsert also locks the row, so the job cannot delete it under this transaction.
 */
export async function bindMandate(svc: Services, agentKeyId: string, signer: string, mandateId: string, cartId: string, until: number | null): Promise<string> {
  const id = ap2BindingId(agentKeyId, mandateId);
  return svc.sql.begin(async (tx) => {
    const [row] = await tx<{ cart_id: string }[]>`
      INSERT INTO bridge_sessions AS b (id, protocol, agent_key_id, cart_id, meta, mandate_expires_at)
      VALUES (${id}, 'ap2', ${agentKeyId}, ${cartId}, ${tx.json({ payment_mandate_id: mandateId } as never)},
        COALESCE(${until === null ? null : new Date(until)}::timestamptz, 'infinity'))
      ON CONFLICT (id) DO UPDATE SET mandate_expires_at = CASE WHEN b.mandate_expires_at IS NULL THEN NULL
          ELSE GREATEST(b.mandate_expires_at, EXCLUDED.mandate_expires_at) END
        WHERE b.protocol = 'ap2'
      RETURNING cart_id`;
    const bound = row?.cart_id ?? cartId;
    if (bound === cartId) await claimMandate(tx, agentKeyId, mandateId, signer, until);
    return bound;
  });
}

/**
 * What an Idempotency-Key's record compares. An empty object hashes as no body (null): `optionalObjectBody` reads an
 * empty body as `{}` where Elysia's parser gave `undefined`, so without this a bodyless cancel or complete retried
 * with the same key across that change got 409 instead of its replay (review R6 LOW-2); `{}` and no body are one
 * request anyway.
 */
export function requestHash(method: string, path: string, body: unknown): string {
  const empty = isObjectRecord(body) && Object.keys(body).length === 0;
  return createHash("sha256").update(JSON.stringify([method, path, empty ? null : (body ?? null)])).digest("hex");
}

/** How many times withIdempotency tries to claim a key whose record vanished between its INSERT and its SELECT. */
const IDEMPOTENCY_CLAIM_TRIES = 3;

/**
 * Runs `work` once per (protocol, agent, Idempotency-Key): the same key and the same request replay the first
 * answer (with `Idempotent-Replayed: true`); the same key with a different request is refused (409
 * IDEMPOTENCY_KEY_CONFLICT); a key whose first request is still running is 409 CHECKOUT_ALREADY_IN_PROGRESS. A
 * request that failed with a retryable error leaves no record, so the retry runs again.
 *
 * The claim (the row with `status NULL`) holds for BRIDGE_IDEMPOTENCY_LEASE_MS. A request that died before filling
 * it in (a crash, a lost connection at the final UPDATE) would otherwise leave the key "still running" for good,
 * possibly after the order was paid; once the lease has run out, the next request with the same key and body takes
 * the claim over and runs `work` again. That is safe because every bridged write lands on the cart's own session
 * idempotency (a derived key per protocol session or mandate): a payment already made answers as completed
 * (`alreadyCompleted` in index.ts), a payment still running as CHECKOUT_ALREADY_IN_PROGRESS. `claim_id` names the
 * holder, so a request overtaken after its lease cannot overwrite or delete its successor's record.
 */
/**
 * Where an Idempotency-Key refusal points: the request header, not a body member, so ACP's `param` and UCP's `path`
 * (JSONPaths into the body) are left out, as for a refusal in the query string or the path (error-shape.ts).
 */
const IDEMPOTENCY_KEY_FIELD = { field: "Idempotency-Key", location: "header" } as const;

export async function withIdempotency(
  svc: Services,
  scope: { protocol: BridgeProtocol; agentKeyId: string; key: string | null; hash: string },
  work: () => Promise<Answer>,
): Promise<Answer> {
  if (!scope.key) return work();
  if (scope.key.length > 255) throw fail("INVALID_ARGUMENT", "Idempotency-Key is too long (max 255).", IDEMPOTENCY_KEY_FIELD);
  const claimId = crypto.randomUUID();
  const leaseMs = svc.config.BRIDGE_IDEMPOTENCY_LEASE_MS;
  const where = () => svc.sql`protocol = ${scope.protocol} AND agent_key_id = ${scope.agentKeyId} AND key = ${scope.key}`;
  // The key's record can vanish between the claim's INSERT and the SELECT (the retention job deletes old records, a
  // retryable failure deletes its claim): the key is then free, so the claim is tried again (review RB-2) rather
  // than the request being told its key belongs to another. Bounded: a key freed that often is answered as busy.
  for (let attempt = 1; ; attempt++) {
    // The database's clock decides leases, so gateways with skewed clocks agree on when a claim ran out.
    const claimed = await svc.sql<{ key: string }[]>`
      INSERT INTO bridge_idempotency (protocol, agent_key_id, key, request_hash, claim_id, claimed_until)
      VALUES (${scope.protocol}, ${scope.agentKeyId}, ${scope.key}, ${scope.hash}, ${claimId}, now() + ${leaseMs} * interval '1 millisecond')
      ON CONFLICT DO NOTHING RETURNING key`;
    if (claimed.length > 0 || (await takeOverExpired(svc, { ...scope, key: scope.key }, claimId, leaseMs))) break;
    const [row] = await svc.sql<{ request_hash: string; status: number | null; response: unknown }[]>`
      SELECT request_hash, status, response FROM bridge_idempotency WHERE ${where()}`;
    if (!row) {
      if (attempt < IDEMPOTENCY_CLAIM_TRIES) continue;
      throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "A request with this Idempotency-Key is still running; retry the same call.", IN_FLIGHT);
    }
    if (row.request_hash !== scope.hash) {
      throw fail("IDEMPOTENCY_KEY_CONFLICT", "This Idempotency-Key was used with a different request.", IDEMPOTENCY_KEY_FIELD);
    }
    if (row.status === null) throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "A request with this Idempotency-Key is still running; retry the same call.", IN_FLIGHT);
    const replayed: Answer = { status: row.status, body: row.response, headers: { "idempotent-replayed": "true" } };
    const refusal = replayedError(replayed);
    if (refusal) throw refusal;
    return replayed;
  }
  const mine = () => svc.sql`${where()} AND claim_id = ${claimId}`;
  let answer: Answer;
  try {
    answer = await work();
  } catch (err) {
    // The caller must see the work's own error, not a failure to record it: an unrecorded claim runs out its lease.
    await settleClaim(svc, scope, async () => {
      if (err instanceof ActorError && !ERROR_TABLE[err.code].retryable) {
        await svc.sql`UPDATE bridge_idempotency SET status = ${errorAnswerOf(err).status}, response = ${svc.sql.json({ __error: err.toData() } as never)}
          WHERE ${mine()}`;
      } else await svc.sql`DELETE FROM bridge_idempotency WHERE ${mine()}`;
    });
    throw err;
  }
  // The work is done (an order may be paid): its answer goes back even if recording it fails; a retry after the
  // lease re-runs the work and gets the same answer from the cart.
  await settleClaim(svc, scope, () => svc.sql`UPDATE bridge_idempotency SET status = ${answer.status}, response = ${svc.sql.json(answer.body as never)}
    WHERE ${mine()}`);
  return answer;
}

/** Takes over a claim of the same request whose lease ran out (its holder died before filling it in). */
async function takeOverExpired(
  svc: Services,
  scope: { protocol: BridgeProtocol; agentKeyId: string; key: string; hash: string },
  claimId: string,
  leaseMs: number,
): Promise<boolean> {
  const taken = await svc.sql<{ key: string }[]>`
    UPDATE bridge_idempotency SET claim_id = ${claimId}, claimed_until = now() + ${leaseMs} * interval '1 millisecond'
    WHERE protocol = ${scope.protocol} AND agent_key_id = ${scope.agentKeyId} AND key = ${scope.key}
      AND request_hash = ${scope.hash} AND status IS NULL AND claimed_until < now()
    RETURNING key`;
  if (taken.length > 0) svc.log.warn("bridge idempotency claim taken over after its lease", { protocol: scope.protocol, agentKeyId: scope.agentKeyId });
  return taken.length > 0;
}

async function settleClaim(svc: Services, scope: { protocol: BridgeProtocol; agentKeyId: string }, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (err) {
    svc.log.warn("bridge idempotency record not written; the claim holds until its lease runs out", {
      protocol: scope.protocol,
      agentKeyId: scope.agentKeyId,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

/**
 * Refusals rebuilt from an Idempotency-Key's record (`replayedError`): the route answering one adds
 * `Idempotent-Replayed: true` (index.ts `respond`), as a replayed success carries it in its Answer. A thrown error has
 * no headers of its own, so the mark travels beside it (audit AD-6: a replayed 400 came back without the header).
 */
const replayedRefusals = new WeakSet<ActorError>();

/** Whether this error is a stored refusal replayed under its Idempotency-Key. */
export function isReplayedRefusal(err: unknown): boolean {
  return err instanceof ActorError && replayedRefusals.has(err);
}

/** A stored refusal replays as the same error, marked as replayed (`isReplayedRefusal`). */
export function replayedError(answer: Answer): ActorError | null {
  const b = answer.body as { __error?: { code: string; message: string; details?: Record<string, unknown> } } | null;
  if (!b || typeof b !== "object" || !b.__error) return null;
  const err = ActorError.fromData(b.__error as never);
  replayedRefusals.add(err);
  return err;
}

function errorAnswerOf(err: ActorError): { status: number } {
  return { status: ERROR_TABLE[err.code].http };
}

// ------------------------------------------------------------------------------------------------ cart calls

/**
 * An ACP/UCP create (or an ACP update with new items) creates a cart: it needs the `cart` scope as POST /agent/cart
 * and create_cart do, besides the route's `checkout`, or a key minted without `cart` would create carts anyway.
 */
export function requireCartScope(agent: { scopes: readonly string[] }, what: string): void {
  if (!agent.scopes.includes("cart")) {
    throw fail("forbidden", `the key lacks the "cart" scope needed to create the cart behind ${what}`, { scope: "cart", acceptedScopes: ["cart"] });
  }
}

/** An ACP/UCP item: one id, a product's or one of its variants' (`resolveItemIds`). */
export interface ItemInput {
  itemId: string;
  quantity: number;
}

/** A bridge's request fields of its item list (ACP `items` / `line_items`, UCP `line_items`) and of item `i`: its id (ACP `items[i].id`, UCP `line_items[i].item.id`) and quantity. */
export interface ItemFields {
  list: string;
  id: (i: number) => string;
  quantity: (i: number) => string;
}

const ITEM_ID = new RegExp(`^(${UUID_HEX})(?::(${UUID_HEX}))?$`, "i");

/** An ACP/UCP item id: a product id, or `<product id>:<variant id>` for one of its variants (`resolveItemIds`). */
export function isItemId(id: string): boolean {
  return ITEM_ID.test(id);
}

/** The item id of a cart line as a session shows it: what the agent sends back to buy the same thing. */
export function itemIdOf(line: { product_id: string; variant_id: string | null }): string {
  return line.variant_id ? `${line.product_id}:${line.variant_id}` : line.product_id;
}

/** An ACP/UCP item list's ids read as cart items (syntax only: nothing is looked up). */
function parseItemIds(items: ItemInput[], fields: ItemFields): CartItemInput[] {
  return items.map((item, i) => {
    const m = ITEM_ID.exec(item.itemId);
    if (!m) throw fail("INVALID_ARGUMENT", `${fields.id(i)} must be a product id or <product id>:<variant id>.`, { field: fields.id(i) });
    const productId = m[1]!.toLowerCase();
    return m[2] ? { productId, variantId: m[2].toLowerCase(), quantity: item.quantity } : { productId, quantity: item.quantity };
  });
}

/**
 * ACP and UCP items carry one id and no variant field, so a variant is named `<product id>:<variant id>` (the
 * product's `id` and its variant's `id` in ProductDetail's `variants`): the line is that product with that variant,
 * which the cart checks as it does the REST `variant_id`. A bare id is a product id (one of a product with variants
 * is refused by the cart: `inBridgeTerms`). Variant ids are chosen by merchants, so a bare variant id is never looked
 * up among all stores' products: another store reusing the id could then make it unbuyable or, once the owner's
 * product goes inactive, buy its own product instead (review R3 MED-3). Product ids are ours, unique by construction.
 * A bare id that names no product but is an active product's variant id is refused with the qualified ids to send.
 *
 * `lines` are the request's merged lines (`newCart`, at most MAX_CART_LINES), line `i` named by `fields`. At most two
 * statements whatever their number (review R-1: one probe per bare id that named no product, up to 10,000 of them
 * before the line bound was checked): the products among the bare ids, then the unknown ones among active products'
 * variant ids, every probe in one `@> ANY` on the `products_variant_ids` index (migration 0023; a LATERAL probe per id
 * is planned as a walk of the primary key for its LIMIT: ~0.5 s per id at 100k products); the first line in request
 * order that is a variant id is refused.
 */
export async function resolveItemIds(svc: Services, lines: CartItemInput[], fields: ItemFields): Promise<void> {
  const bare = [...new Set(lines.filter((l) => !l.variantId).map((l) => l.productId))];
  if (bare.length === 0) return;
  const products = new Set((await svc.sql<{ id: string }[]>`SELECT id::text AS id FROM products WHERE id = ANY(${bare}::uuid[])`).map((r) => r.id));
  const unknown = bare.filter((id) => !products.has(id));
  if (unknown.length === 0) return;
  // One probe per unknown id, all in one statement (`@> ANY`, each on the index); at most 5 products named per id.
  const probes = unknown.map((id) => JSON.stringify([{ id }]));
  const rows = await svc.sql<{ variant_id: string; id: string }[]>`
    SELECT variant_id, id FROM (
      SELECT e->>'id' AS variant_id, p.id::text AS id, row_number() OVER (PARTITION BY e->>'id' ORDER BY p.id) AS n
      FROM products p CROSS JOIN LATERAL jsonb_array_elements(p.variants) e
      WHERE p.active AND p.variants @> ANY(${probes}::text[]::jsonb[]) AND e->>'id' = ANY(${unknown}::text[])
    ) r WHERE n <= 5 ORDER BY variant_id, n`;
  const productsOf = new Map<string, string[]>();
  for (const r of rows) productsOf.set(r.variant_id, [...(productsOf.get(r.variant_id) ?? []), r.id]);
  for (const [i, l] of lines.entries()) {
    const ids = l.variantId ? undefined : productsOf.get(l.productId);
    if (!ids) continue;
    throw fail("INVALID_ARGUMENT", `${fields.id(i)} is a variant id: name a variant as <product id>:<variant id> (details.item_ids).`, {
      field: fields.id(i),
      variant_id: l.productId,
      item_ids: ids.map((id) => `${id}:${l.productId}`),
    });
  }
}

/**
 * A cart refusal naming one of its lines (`items[i]`, `items[i].product_id|variant_id|quantity`) in the bridge's
 * request terms. The line of a product that names no variant (actors/cart/variant-line.ts) says what to send
 * instead: one of its variants as `<product id>:<variant id>` (each of `details.variants` gains that `item_id`).
 */
export function inBridgeTerms(err: unknown, fields: ItemFields): unknown {
  if (!(err instanceof ActorError)) return err;
  const m = /^items\[(\d+)\](?:\.(product_id|variant_id|quantity))?$/.exec(String(err.details?.field ?? ""));
  if (!m) return err;
  const i = Number(m[1]);
  const field = m[2] === "quantity" ? fields.quantity(i) : fields.id(i);
  if (err.code === "MISSING_REQUIRED_ARGUMENT" && m[2] === "variant_id") {
    const productId = String(err.details?.product_id);
    const variants = Array.isArray(err.details?.variants) ? (err.details.variants as Record<string, unknown>[]) : [];
    const message = `${field} names a product with ${String(err.details?.variant_count)} variants: send one of them as <product id>:<variant id> (details.variants[].item_id).`;
    return new ActorError(err.code, message, { ...err.details, field, variants: variants.map((v) => ({ ...v, item_id: `${productId}:${String(v.variant_id)}` })) });
  }
  return new ActorError(err.code, err.message, { ...err.details, field });
}

/**
 * A new cart of the agent's with these items (the session prices it afterwards: shipping.ts `priceCart`). Repeated
 * items are merged here by the cart's own rule (one line per product and variant, quantities added up), before the
 * cart's message bounds apply (audit B-5): ACP 2026-04-17's Item has no quantity, so 101 units of one product are 101
 * entries, one line of quantity 101, which the `create` message (at most MAX_CART_LINES entries) refused with its
 * own validation text. The bounds are then said here in the request's terms: more than MAX_CART_LINES different
 * items is 400 on the list, a merged line over MAX_LINE_QUANTITY the cart's refusal (`mergedLineTooLarge`) on the
 * first entry's quantity; every cart refusal of a line names the request's first entry of it. The ids are read and
 * the lines counted before any statement (review R-1), so a list over the bound costs no lookup.
 */
export async function newCart(svc: Services, keyId: string, items: ItemInput[], fields: ItemFields): Promise<CartView> {
  const lines: CartItemInput[] = [];
  const firstAt: number[] = [];
  const lineOf = new Map<string, number>();
  for (const [at, l] of parseItemIds(items, fields).entries()) {
    const k = `${l.productId}:${l.variantId ?? ""}`;
    const j = lineOf.get(k);
    if (j === undefined) {
      lineOf.set(k, lines.length);
      lines.push({ ...l });
      firstAt.push(at);
    } else lines[j]!.quantity += l.quantity;
  }
  if (lines.length > MAX_CART_LINES) {
    throw fail("INVALID_ARGUMENT", `${fields.list} names ${lines.length} different items; a checkout session holds at most ${MAX_CART_LINES} (repeated entries of one item add up to one line).`, {
      field: fields.list,
      lines: lines.length,
      max_lines: MAX_CART_LINES,
    });
  }
  // the merged line `i` is named by the request's first entry of it
  const merged: ItemFields = { list: fields.list, id: (i) => fields.id(firstAt[i] ?? i), quantity: (i) => fields.quantity(firstAt[i] ?? i) };
  await resolveItemIds(svc, lines, merged);
  for (const [i, l] of lines.entries()) {
    const tooLarge = mergedLineTooLarge(i, l.productId, l.variantId ?? null, l.quantity);
    if (tooLarge) throw inBridgeTerms(tooLarge, merged);
  }
  try {
    return await svc.actors.ask(cartActor, crypto.randomUUID(), "create", { keyId, items: lines });
  } catch (err) {
    throw inBridgeTerms(err, merged);
  }
}

export function getCart(svc: Services, keyId: string, cartId: string): Promise<CartView> {
  return svc.actors.ask(cartActor, cartId, "get", { keyId });
}

/**
 * The one-call checkout on the cart with a card-rail token (a sandbox test token or MOCK). `limits`: a mandate's,
 * checked by the cart on the total it charges in that same turn (review R4-5). `refuseAfterMerchantCancel`: an
 * ACP/UCP session's complete, which the cart refuses in its own turn (SESSION_INACTIVE `reason: canceled_by_merchant`)
 * when a merchant ended the cart's last checkout session, instead of previewing it anew: the bridge's check reads the
 * orders before this turn, and a merchant cancel landing between the two would otherwise be paid over (audit B-1).
 */
export function completeCart(
  svc: Services,
  keyId: string,
  cartId: string,
  opts: { paymentMethod?: string; idempotencyKey: string; limits?: PaymentLimitsInput; refuseAfterMerchantCancel?: boolean },
): Promise<CompleteReply> {
  return svc.actors.ask(cartActor, cartId, "checkout", {
    keyId,
    rail: "card",
    idempotencyKey: opts.idempotencyKey,
    ...(opts.paymentMethod ? { paymentMethod: opts.paymentMethod } : {}),
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.refuseAfterMerchantCancel ? { refuseAfterMerchantCancel: true } : {}),
  });
}

/** A UUID v4 derived from a string (the cart's idempotency key for a protocol's own session or key). */
export function derivedUuidV4(seed: string): string {
  return uuidV4FromHex(createHash("sha256").update(seed).digest("hex"));
}

/**
 * The refusal of a request whose Idempotency-Key's first request is still running: the same code as a session busy
 * with another write, told apart by `reason` (ACP 2026-04-17 names it `idempotency_in_flight`: acp-2026-04-17.ts).
 */
const IN_FLIGHT = { reason: "idempotency_in_flight" } as const;

export function asRecord(v: unknown): Record<string, unknown> {
  return isObjectRecord(v) ? v : {};
}

/**
 * A payment token read from the protocol's member `field`, refused when longer than a checkout takes
 * (PAYMENT_TOKEN_MAX_LENGTH, REST's `payment_method` bound): such a token reached the cart's message schema and came
 * back as "invalid cart.checkout message …" on `/paymentMethod`, a member no protocol request has, and an AP2 mandate
 * carrying one had been claimed and bound to the cart first (helper E, session 20). The caller checks presence.
 */
export function boundedToken(token: string, field: string): string {
  if (token.length > PAYMENT_TOKEN_MAX_LENGTH) {
    throw fail("INVALID_ARGUMENT", `${field} must be at most ${PAYMENT_TOKEN_MAX_LENGTH} characters (this service's sandbox payment token).`, { field, max_length: PAYMENT_TOKEN_MAX_LENGTH });
  }
  return token;
}
