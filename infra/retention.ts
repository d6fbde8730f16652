/**
 * Data retention (audit W-3, W-4): deletes rows nothing reads any more, one rule per table, each a DELETE of at most
 * RETENTION_BATCH rows repeated until a batch comes back short (or the run's time budget is spent). Started by every
 * process that hosts actors (gateway/boot.ts); a DELETE is idempotent and its candidates are taken `FOR UPDATE SKIP
 * LOCKED`, so several hosts running it at once neither wait on each other nor fail. docs/operations.md "Data retention".
 *
 * What each rule keeps, and why (what reads the table):
 *  - `oauth_codes`: a code past its 60 s life is useless, but a used code presented again revokes the refresh-token
 *    family it started (gateway/oauth/grants.ts redeemCode). So a code goes only once it expired more than the grace
 *    ago AND its family has no live refresh token (nothing left to revoke): one row per live family stays.
 *  - `oauth_refresh_tokens`: rotated on every refresh, so a connection adds a row per refresh. A token goes once it
 *    expired more than the grace ago: presenting it then is refused as unknown instead of revoking its family, which
 *    it could no longer use anyway. Unexpired tokens stay, used or revoked ones too (reuse detection).
 *  - cart actors (`actor_state` kind `cart`, with nothing pending in `actor_reminders`): a cart OPEN, EXPIRED,
 *    ABANDONED or REPLACED whose sliding expiry passed more than the grace ago, whose checkout session (if any) ended,
 *    and that no order, ACP/UCP/AP2 session or x402 row names. A cart with an order is part of that order's history
 *    (the bridges read a session's paid orders through its cart); COMPLETED and CHECKOUT carts are never deleted. A
 *    deleted cart reads as CART_NOT_FOUND, the answer an expired one already gets. Its scan is a keyset over the
 *    partial index of migration 0089 (carts in those four statuses, by expiry): a run reads the carts due, once each,
 *    never a live or a paid one (it walked every cart on each batch until session 12).
 *  - `bridge_sessions` (ACP/UCP; session 9): a session is read for its status and, through its cart, for its paid
 *    orders. It goes together with its cart: when the cart is one the cart rule would delete but for the session naming
 *    it (so no order names it, it is not COMPLETED or CHECKOUT, its expiry passed more than the cart grace ago, its
 *    checkout session ended, nothing is due for it), the session was not changed within the grace and no write holds
 *    its claim (by the database's clock, which set the claim). This rule runs before the cart rule, which then deletes
 *    the cart in the same run. A session whose cart an order or x402 row names is kept for good and marked so its
 *    scan no longer reads it (MARKING_STATEMENTS; review RG-4). AP2 rows are the next rule's.
 *  - AP2 mandate bindings (session 11): the `ap2` row of `bridge_sessions` (a mandate bound, per agent key, to the one
 *    cart it pays) and the `ap2_mandate_agents` claim (the mandate held, per signer key, by the one agent key that
 *    paid with it). Both are read only by an AP2 payment (gateway/bridge/index.ts `ap2Pay`), to refuse the mandate for
 *    a second cart or a second agent key. Each records (migration 0087) the last instant the mandate as presented could
 *    be accepted: the first of its signed expiries (intent_expiry, cart_expiry, the user authorization's `exp`). After
 *    it every presentation is refused before either row is read (401 `expired` for `exp`; 403 MANDATE_LIMIT_EXCEEDED
 *    `expiry` for a cart not paid yet), and a replay for a paid cart is answered from that cart, never from the rows
 *    (the cart's session key is derived from the agent key and the mandate id: the same mandate gets its receipt, 200,
 *    any other an `expiry` 403; ap2Pay binds nothing for an expired mandate). So a row goes
 *    RETENTION_AP2_MANDATE_GRACE_DAYS after that instant (the grace, at least a day, covers a gateway clock behind the
 *    job's and the database's: the gateway judges expiry by its own; review V1-3), and by the database's clock too. A
 *    mandate without any expiry ('infinity') and a row written before 0087 (NULL: its expiry was never recorded) are
 *    kept for ever: either could still be presented and accepted. Every later presentation whose signature verifies
 *    moves the instant later if its own is later (the user signed the same mandate id again), never earlier, even one
 *    refused for another cart or agent key (the claim, the presenter's binding and the claim holder's, review V1-2):
 *    the rows refuse what it could pay. Runs before the cart rule: an unpaid cart named only by a deleted binding then
 *    goes in the same run (if old enough). The
 *    gateway side (recording the instant; an expired mandate on a paid cart answered from the cart) is
 *    gateway/bridge/common.ts `bindMandate`, ap2-auth.ts `claimMandate` and index.ts `ap2Pay`; until a host records it,
 *    its rows stay NULL and are kept.
 *  - `bridge_idempotency` (session 9): an Idempotency-Key record whose last claim's lease ended more than
 *    RETENTION_BRIDGE_IDEMPOTENCY_DAYS ago (never a claim not yet filled in while its lease is live by the database's
 *    clock). The key then runs as new; every bridged payment also lands on the cart's own session idempotency (a
 *    derived key), so a late repeat never charges twice.
 *  - `stock_reservations` (session 9): released and returned reservations (they hold nothing) unchanged for
 *    RETENTION_RESERVATION_GRACE_DAYS, once their order is no longer pending and the order's cart has no reminder due,
 *    except a released row that is the order's last attempt (`orders.intent_id`). A released row is what refuses a
 *    replay of its reservation id (actors/store/commerce.ts `priorOf`); a replay comes only from the cart's own live
 *    checkout (its turn, its re-drive, an ask's retries). Without a row, a begin of an earlier attempt of an order that
 *    moved on is refused anyway (`gone`, STATE_EXECUTION_BLOCKED), but the last attempt's id would be answered from the
 *    order as held (`priorOf`'s fallback; a canceled order's `released` mark exists to refuse exactly that), so that one
 *    row per order stays, kept for good and marked so the scan no longer reads it (MARKING_STATEMENTS; review RG-4). A
 *    returned last attempt goes (session 11): `priorOf` answers held, committed and returned alike ("begun before",
 *    nothing held again), so the fallback's `held` is the same answer. Held rows are live stock: never deleted.
 *  - committed `stock_reservations` (session 11): a committed row (the paid attempt: always its order's intent_id) is
 *    read after the sale only by `returnSoldStock` (refund-flow.ts), which gives its units back when the merchant
 *    cancels the order (paid or fulfilled) or a full refund lands while it is paid. Once the order left paid and
 *    fulfilled (shipped, delivered, refunded, canceled: no move leads back) nothing can; a trigger on orders stamps the
 *    row's `order_closed_at` then (migration 0087; orders closed before it were stamped by 0088 from their last
 *    change), and the row goes RETENTION_RESERVATION_GRACE_DAYS after it, once its cart has no reminder due. Its other
 *    readers answer the same without it: a replayed begin of its id (`priorOf`'s fallback: the order's intent_id, as
 *    held: "begun before", created false, nothing held), a replayed settle (only a held row of a pending order is
 *    settled), a reconciliation (the same settle). Rows of an order still paid or
 *    fulfilled, however old, stay (the merchant may still cancel it) and are not in the scan's index.
 *  - `webhook_deliveries` (session 9): deliveries finished (delivered, or dead) more than
 *    RETENTION_WEBHOOK_DELIVERY_DAYS ago, with their attempt log (ON DELETE CASCADE). Pending and failed ones stay
 *    (they are still being tried). Aged from `finished_at` (migration 0086), written where a delivery is delivered or
 *    dead-lettered: the retry horizon and an endpoint's deletion kill a delivery without a new attempt, so its last
 *    attempt can be days older than its death (review RB-4). A row without it (finished before 0086, or by a host of
 *    an earlier version during a rolling deploy) falls back to the old age: `delivered_at`, else its last attempt,
 *    else its creation. Runs before the event rule, which then takes the events left without a delivery.
 *  - `webhook_events`: dispatched events that got no delivery (the store had no endpoint subscribed, or their
 *    deliveries were deleted by the rule above), older than RETENTION_WEBHOOK_EVENT_DAYS. Events with a delivery stay:
 *    the dashboard's delivery list shows them and any delivery can be redelivered from its event's payload.
 *  - `ap2_key_nonces` (session 9; until then swept inside every registration challenge's transaction): nonces that
 *    expired more than an hour ago by the job's clock and have expired by the database's, which decides expiry (the
 *    hour and the database check cover a host whose clock runs ahead). The per-key bound on live nonces stays on the
 *    request path (gateway/bridge/ap2-keys.ts).
 *  - `product_price_history` (session 15): read only by the price-history route (actors/store/reads.ts priceHistory),
 *    whose longest window is PRICE_HISTORY_LONGEST_DAYS (90) and which reads the window's rows plus the product's last
 *    row before the window (the price it opened at, in any currency). A row goes once it is older than that and a
 *    day (PRICE_HISTORY_GRACE_DAYS: a reader's clock behind the job's), by the job's clock and the database's (which
 *    stamps rows), AND a later row of its product is too: each product keeps its last row before the cut, however
 *    old (a product never re-priced keeps its only row). Rows older than the cut are never written again (a write
 *    folds only into the current hour's row), so a row kept or deleted stays right. The scan is a keyset over
 *    product_price_history_time (migration 0098), oldest first: a run reads each old row once, so the rows kept (one
 *    per product at most) cost one read a run, not one a batch, and recent rows are never read.
 *  - `oauth_clients` (audit W-1; the rule is gateway/oauth/clients.ts `deleteUnusedClients`, next to the stamping of
 *    a client's use): registered clients without an owner that no user authorized within 24 h of registering, or
 *    unused for 31 days (a refresh token's life and a day). Clients registered with a user session stay.
 */
import type { SqlFragment } from "../actors/runtime/state-write.ts";
import { PRICE_HISTORY_LONGEST_DAYS } from "../actors/store/reads.ts";
import { deleteUnusedClients } from "../gateway/oauth/clients.ts";
import { CONFIG_VARS, type Config } from "./config.ts";
import type { Sql } from "./db.ts";
import type { Logger } from "./log.ts";
import { UUID_HEX } from "./uuid.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
/** A run stops starting new batches after this long; the next interval goes on where it stopped. */
const RUN_BUDGET_MS = 60_000;

/** The settings added in session 9 may be left out (their defaults apply), so callers written before them still hold. */
type LaterSettings = "RETENTION_WEBHOOK_DELIVERY_DAYS" | "RETENTION_BRIDGE_IDEMPOTENCY_DAYS" | "RETENTION_RESERVATION_GRACE_DAYS" | "RETENTION_AP2_MANDATE_GRACE_DAYS";
export type RetentionSettings = Pick<Config, "RETENTION_BATCH" | "RETENTION_OAUTH_GRACE_DAYS" | "RETENTION_CART_GRACE_DAYS" | "RETENTION_WEBHOOK_EVENT_DAYS"> &
  Partial<Pick<Config, LaterSettings>>;
const days = (s: RetentionSettings, k: LaterSettings): number => s[k] ?? CONFIG_VARS[k].default;
/** How long after its expiry an AP2 registration nonce is deleted: the database's clock decides expiry, not ours. */
const NONCE_GRACE_MS = 60 * 60 * 1000;
/** Price observations are kept this long past the longest window, for a reader whose clock is behind the job's. */
const PRICE_HISTORY_GRACE_DAYS = 1;

/**
 * One rule: deletes at most `batch` rows whose time has come at `nowMs`, returns how many it deleted. A rule that
 * also marks rows it keeps for good (see MARKING_STATEMENTS) returns both counts: `taken` (deleted + marked) says
 * whether the batch was full, so the run goes on while either kind of row is left.
 */
type Rule = (sql: Sql, s: RetentionSettings, nowMs: number, batch: number, run: RunState) => Promise<number | { deleted: number; taken: number }>;

/** What a rule carries from one batch of a run to the next (a new object each run). */
export interface RunState {
  /** The carts rule's keyset: the last cart its scan examined (actor_state_cart_expiry_ms's key), none yet at the start. */
  cartsAfter?: CartKey;
  /** The price-history rule's keyset: the last row its scan examined (product_price_history_time's key). */
  priceHistoryAfter?: PriceRowKey;
}
/** A row's key in product_price_history_time (migration 0098): its time as Postgres prints it (microseconds), its id. */
export interface PriceRowKey {
  recordedAt: string;
  id: string;
}
/** A cart's key in actor_state_cart_expiry_ms (migration 0096): its `expiry_ms` as text, and its id. */
export interface CartKey {
  expiresAt: string;
  id: string;
}

const UUID = `^${UUID_HEX}$`;

export const RETENTION_RULES: Record<string, Rule> = {
  async oauth_codes(sql, s, nowMs, batch) {
    const now = new Date(nowMs);
    const res = await sql`
      DELETE FROM oauth_codes WHERE code_hash IN (
        SELECT c.code_hash FROM oauth_codes c
        WHERE c.expires_at < ${new Date(nowMs - s.RETENTION_OAUTH_GRACE_DAYS * DAY_MS)}
          AND NOT EXISTS (SELECT 1 FROM oauth_refresh_tokens t WHERE t.family_id = c.family_id AND t.expires_at > ${now} AND t.revoked_at IS NULL)
        LIMIT ${batch} FOR UPDATE OF c SKIP LOCKED)`;
    return res.count;
  },

  async oauth_refresh_tokens(sql, s, nowMs, batch) {
    const res = await sql`
      DELETE FROM oauth_refresh_tokens WHERE token_hash IN (
        SELECT token_hash FROM oauth_refresh_tokens WHERE expires_at < ${new Date(nowMs - s.RETENTION_OAUTH_GRACE_DAYS * DAY_MS)}
        LIMIT ${batch} FOR UPDATE SKIP LOCKED)`;
    return res.count;
  },

  // Before `carts`: a session deleted here lets its cart go in the same run.
  async bridge_sessions(sql, s, nowMs, batch) {
    const [r] = await MARKING_STATEMENTS.bridge_sessions(sql, s, nowMs, batch);
    return r!;
  },

  // Before `carts`: an unpaid cart named only by a binding deleted here goes in the same run.
  async ap2_mandate_bindings(sql, s, nowMs, batch) {
    return (await DELETE_STATEMENTS.ap2_mandate_bindings(sql, s, nowMs, batch)).count;
  },

  async ap2_mandate_agents(sql, s, nowMs, batch) {
    return (await DELETE_STATEMENTS.ap2_mandate_agents(sql, s, nowMs, batch)).count;
  },

  // A keyset over actor_state_cart_expiry_ms (migration 0096): each batch examines the next `batch` carts past the
  // horizon and deletes those out of use, so a run reads each cart due once, and never a live or a paid one.
  async carts(sql, s, nowMs, batch, run) {
    const [r] = await DELETE_STATEMENTS.carts(sql, s, nowMs, batch, run.cartsAfter);
    if (r!.last_expires_at !== null && r!.last_id !== null) run.cartsAfter = { expiresAt: r!.last_expires_at, id: r!.last_id };
    return { deleted: r!.deleted, taken: r!.taken };
  },

  async bridge_idempotency(sql, s, nowMs, batch) {
    const res = await sql`
      DELETE FROM bridge_idempotency WHERE (protocol, agent_key_id, key) IN (
        SELECT protocol, agent_key_id, key FROM bridge_idempotency
        WHERE claimed_until < ${new Date(nowMs - days(s, "RETENTION_BRIDGE_IDEMPOTENCY_DAYS") * DAY_MS)}
          -- never a claim not yet filled in that the database's clock (which set its lease) still counts as live
          AND (status IS NOT NULL OR claimed_until < now())
        LIMIT ${batch} FOR UPDATE SKIP LOCKED)`;
    return res.count;
  },

  async stock_reservations(sql, s, nowMs, batch) {
    const [r] = await MARKING_STATEMENTS.stock_reservations(sql, s, nowMs, batch);
    return r!;
  },

  async sold_stock_reservations(sql, s, nowMs, batch) {
    return (await DELETE_STATEMENTS.sold_stock_reservations(sql, s, nowMs, batch)).count;
  },

  // Before `webhook_events`: an event whose deliveries went here goes in the same run (if old enough).
  async webhook_deliveries(sql, s, nowMs, batch) {
    const res = await sql`
      DELETE FROM webhook_deliveries WHERE id IN (
        SELECT id FROM webhook_deliveries
        WHERE status IN ('delivered', 'dead')
          -- the expression of the partial index webhook_deliveries_finished (migration 0086)
          AND COALESCE(finished_at, delivered_at, last_attempt_at, created_at) < ${new Date(nowMs - days(s, "RETENTION_WEBHOOK_DELIVERY_DAYS") * DAY_MS)}
        LIMIT ${batch} FOR UPDATE SKIP LOCKED)`;
    return res.count;
  },

  async webhook_events(sql, s, nowMs, batch) {
    const res = await sql`
      DELETE FROM webhook_events WHERE id IN (
        SELECT e.id FROM webhook_events e
        WHERE (e.dispatched_at IS NOT NULL AND e.dispatched_at < ${new Date(nowMs - s.RETENTION_WEBHOOK_EVENT_DAYS * DAY_MS)}
            -- an event of a store with an endpoint is never marked (migration 0101): done once below the fan-out's
            -- cursor, and kept from its creation
            OR e.dispatched_at IS NULL AND e.created_at < ${new Date(nowMs - s.RETENTION_WEBHOOK_EVENT_DAYS * DAY_MS)}
              AND e.fanout_xid < (SELECT done_below FROM webhook_fanout_cursor))
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
        LIMIT ${batch} FOR UPDATE OF e SKIP LOCKED)`;
    return res.count;
  },

  oauth_clients: (sql, _s, nowMs, batch) => deleteUnusedClients(sql, nowMs, batch),

  // A keyset over product_price_history_time (migration 0098), like the cart rule: each old row is examined once a run.
  async product_price_history(sql, s, nowMs, batch, run) {
    const [r] = await DELETE_STATEMENTS.product_price_history(sql, s, nowMs, batch, run.priceHistoryAfter);
    if (r!.last_recorded_at !== null && r!.last_id !== null) run.priceHistoryAfter = { recordedAt: r!.last_recorded_at, id: r!.last_id };
    return { deleted: r!.deleted, taken: r!.taken };
  },

  async ap2_key_nonces(sql, _s, nowMs, batch) {
    const res = await sql`
      DELETE FROM ap2_key_nonces WHERE nonce IN (
        SELECT nonce FROM ap2_key_nonces WHERE expires_at < ${new Date(nowMs - NONCE_GRACE_MS)} AND expires_at < now()
        LIMIT ${batch} FOR UPDATE SKIP LOCKED)`;
    return res.count;
  },
};

/**
 * The two rules whose partial index also held rows they keep for good (review RG-4): each batch walked past all of
 * them, so its cost grew with history. Each statement takes at most `batch` rows that are either deletable (exactly
 * the condition the rule always had) or kept for a reason nothing can end, deletes the first and marks the second;
 * the index (migration 0085) leaves marked rows out, so the next batch and run never read them again. A batch then
 * walks its candidates plus the rows kept for now (a pending order's, a cart's with a reminder due, a session's whose
 * cart is still in use), which live rows bound, not history. Apart from the rules so a test can EXPLAIN them.
 *
 *  - `stock_reservations`: the kept-for-good row is the last attempt (`orders.intent_id`) of an order no longer
 *    pending. intent_id is written only while the order is pending (commerce.ts `reuse`, `paidRows`), no move leads
 *    back to pending (order-machine.ts) and orders are never deleted, so the mark is never wrong later.
 *  - `bridge_sessions`: kept for good while its cart is one an order or an x402 row names (none of those rows is ever
 *    deleted and their cart_id never changes, so the cart rule never deletes that cart and the session never goes
 *    with it). The mark is that cart's id (`kept_with_cart`); a session moved to a new cart (an ACP/UCP items update)
 *    has it cleared by a trigger (migration 0085) and is back among the candidates.
 */
export const MARKING_STATEMENTS = {
  stock_reservations: (sql: Sql, s: RetentionSettings, nowMs: number, batch: number) => sql<{ deleted: number; taken: number }[]>`
    WITH c AS (
      SELECT r.id, r.status = 'released' AND r.id IS NOT DISTINCT FROM o.intent_id AS last_attempt
      FROM stock_reservations r
      JOIN orders o ON o.id = r.order_id
      -- the predicate of the partial index stock_reservations_done (migration 0085)
      WHERE r.status IN ('released', 'returned') AND NOT r.kept_as_last_attempt
        AND r.updated_at < ${new Date(nowMs - days(s, "RETENTION_RESERVATION_GRACE_DAYS") * DAY_MS)}
        AND o.status <> 'pending'
        -- a released last attempt (the order's intent_id) keeps its row: with none, priorOf answers that id from the
        -- order as held; its released mark (cancelPendingOrderRows) is what refuses it (review RB-1). Taken here to
        -- be marked; any other row (a returned last attempt too: priorOf's answer is the same without it) is deleted
        -- once its order's cart has nothing due.
        AND ((r.status = 'released' AND r.id IS NOT DISTINCT FROM o.intent_id)
             OR o.cart_id IS NULL OR NOT EXISTS (SELECT 1 FROM actor_reminders m WHERE m.kind = 'cart' AND m.id = o.cart_id::text))
      LIMIT ${batch} FOR UPDATE OF r SKIP LOCKED),
    marked AS (UPDATE stock_reservations SET kept_as_last_attempt = true WHERE id IN (SELECT id FROM c WHERE last_attempt)),
    gone AS (DELETE FROM stock_reservations WHERE id IN (SELECT id FROM c WHERE NOT last_attempt) RETURNING 1)
    SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM c)::int AS taken`,

  bridge_sessions: (sql: Sql, s: RetentionSettings, nowMs: number, batch: number) => sql<{ deleted: number; taken: number }[]>`
    WITH c AS (
      SELECT b.id, b.cart_id, k.for_good
      FROM bridge_sessions b
      CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM orders o WHERE o.cart_id = b.cart_id)
          OR EXISTS (SELECT 1 FROM x402_intents x WHERE x.cart_id = b.cart_id::text)
          OR EXISTS (SELECT 1 FROM x402_authorizations x WHERE x.cart_id = b.cart_id::text) AS for_good) k
      -- the predicate of the partial index bridge_sessions_retention (migration 0085)
      WHERE b.protocol IN ('acp', 'ucp') AND b.kept_with_cart IS NULL
        AND b.updated_at < ${new Date(nowMs - s.RETENTION_CART_GRACE_DAYS * DAY_MS)}
        AND (k.for_good OR (
          -- a write's claim is judged by the database's clock, which set it (withSessionClaim): a job host whose
          -- clock runs ahead must not take a live claim for an ended one (review RB-3)
          (b.claimed_until IS NULL OR b.claimed_until < now())
          AND EXISTS (SELECT 1 FROM actor_state st WHERE st.kind = 'cart' AND st.id = b.cart_id::text
            AND ${cartOutOfUse(sql, s, nowMs, sql`st`, sql`b.cart_id`)})))
      LIMIT ${batch} FOR UPDATE OF b SKIP LOCKED),
    marked AS (UPDATE bridge_sessions b SET kept_with_cart = c.cart_id FROM c WHERE b.id = c.id AND c.for_good),
    gone AS (DELETE FROM bridge_sessions WHERE id IN (SELECT id FROM c WHERE NOT for_good) RETURNING 1)
    SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM c)::int AS taken`,
};

/**
 * The session-11 rules' statements (see the header), apart from the rules so a test can EXPLAIN them. Each reads its
 * candidates from a partial index of migration 0087 holding only rows that can become deletable by time alone: an
 * AP2 row whose mandate's expiry was recorded (a `< horizon` range never reaches 'infinity'), a committed reservation
 * whose order closed. So a batch walks its candidates (plus, for reservations, those whose cart has a reminder due),
 * never the bindings of mandates without an expiry nor the rows of orders still paid or fulfilled.
 */
export const DELETE_STATEMENTS = {
  /**
   * The cart rule (session 12): the next `batch` carts, in expiry order after `after`, of the partial index
   * actor_state_cart_expiry_ms (migration 0096: carts by `expiry_ms`, a lower bound of the sliding expiry the cart's
   * turns keep within an hour of it while the cart is in a status the rule deletes) whose expiry passed the horizon are
   * examined, unlocked; those out of use are taken `FOR UPDATE SKIP LOCKED` (the row is judged again as it is when
   * locked, on its state: status and expiry) and deleted. A cart examined that is CHECKOUT or COMPLETED (its turns
   * leave the column as it was when it left OPEN, so that their updates stay HOT) has its column cleared, taken the same
   * way: it leaves the index, so a paid cart is examined once, not once a run; a turn that opens it again writes it
   * (actors/runtime/state-write.ts). `taken` is how many were examined, so the run goes on while a batch is full; the
   * last key examined is where the next batch starts. A cart kept (an order, x402 or protocol row names it, a checkout
   * is live, a reminder is due, or its expiry is up to an hour after its column's) is examined once a run, not once a
   * batch.
   */
  carts: (sql: Sql, s: RetentionSettings, nowMs: number, batch: number, after?: CartKey) => sql<{ deleted: number; taken: number; last_expires_at: string | null; last_id: string | null }[]>`
    WITH examined AS (
      SELECT st.id, st.expiry_ms AS expires_at FROM actor_state st
      -- the predicate of the partial index actor_state_cart_expiry_ms (migration 0096), then its key's range
      WHERE st.kind = 'cart' AND st.expiry_ms IS NOT NULL
        AND st.expiry_ms < ${nowMs - s.RETENTION_CART_GRACE_DAYS * DAY_MS}::int8
        ${after ? sql`AND (st.expiry_ms, st.id) > (${after.expiresAt}::int8, ${after.id}::text)` : sql``}
      ORDER BY st.expiry_ms, st.id
      LIMIT ${batch}),
    doomed AS (
      SELECT st.id FROM actor_state st
      -- every cart id is a uuid (the create message's); the CASE keeps the cast from ever seeing another id
      CROSS JOIN LATERAL (SELECT CASE WHEN st.id ~* ${UUID} THEN st.id::uuid END AS cart_id) c
      WHERE st.kind = 'cart' AND st.id IN (SELECT id FROM examined) AND c.cart_id IS NOT NULL
        AND jsonb_typeof(st.state->'cart'->'expiresAt') = 'number'
        AND ${cartOutOfUse(sql, s, nowMs, sql`st`, sql`c.cart_id`)}
        AND NOT EXISTS (SELECT 1 FROM bridge_sessions b WHERE b.cart_id = c.cart_id)
      FOR UPDATE OF st SKIP LOCKED),
    gone AS (DELETE FROM actor_state WHERE kind = 'cart' AND id IN (SELECT id FROM doomed) RETURNING 1),
    parked AS (
      SELECT st.id FROM actor_state st
      WHERE st.kind = 'cart' AND st.id IN (SELECT id FROM examined) AND st.state->'cart'->>'status' IN ('CHECKOUT', 'COMPLETED')
      FOR UPDATE OF st SKIP LOCKED),
    park AS (UPDATE actor_state SET expiry_ms = NULL WHERE kind = 'cart' AND id IN (SELECT id FROM parked)),
    last AS (SELECT expires_at::text AS expires_at, id FROM examined ORDER BY examined.expires_at DESC, id DESC LIMIT 1)
    SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM examined)::int AS taken,
      (SELECT expires_at FROM last) AS last_expires_at, (SELECT id FROM last) AS last_id`,

  /**
   * The price-history rule (session 15): the next `batch` rows, in time order after `after`, older than the cut (the
   * longest window and a day, by the job's clock and the database's) are examined, unlocked; those with a later row of
   * their product also older than the cut (so not the last one before it, which a 90-day window opens at) are taken
   * `FOR UPDATE SKIP LOCKED` and deleted. `taken` is how many were examined; the last key examined is where the next
   * batch starts.
   */
  product_price_history: (sql: Sql, _s: RetentionSettings, nowMs: number, batch: number, after?: PriceRowKey) => sql<{ deleted: number; taken: number; last_recorded_at: string | null; last_id: string | null }[]>`
    WITH k AS (
      SELECT least(${new Date(nowMs - (PRICE_HISTORY_LONGEST_DAYS + PRICE_HISTORY_GRACE_DAYS) * DAY_MS)}::timestamptz,
        now() - make_interval(days => ${PRICE_HISTORY_LONGEST_DAYS + PRICE_HISTORY_GRACE_DAYS})) AS cut),
    examined AS (
      SELECT h.id, h.product_id, h.recorded_at FROM product_price_history h
      WHERE h.recorded_at < (SELECT cut FROM k)
        ${after ? sql`AND (h.recorded_at, h.id) > (${after.recordedAt}::timestamptz, ${after.id}::bigint)` : sql``}
      ORDER BY h.recorded_at, h.id
      LIMIT ${batch}),
    doomed AS (
      SELECT h.id FROM product_price_history h
      WHERE h.id IN (SELECT id FROM examined)
        -- a later row of the product before the cut (product_price_history_product_time): h is not the last one
        AND EXISTS (SELECT 1 FROM product_price_history n
          WHERE n.product_id = h.product_id AND n.recorded_at >= h.recorded_at AND n.recorded_at < (SELECT cut FROM k)
            AND (n.recorded_at > h.recorded_at OR n.id > h.id))
      FOR UPDATE OF h SKIP LOCKED),
    gone AS (DELETE FROM product_price_history WHERE id IN (SELECT id FROM doomed) RETURNING 1),
    -- ordered by the columns, not the output's text (ids compared as text would put 999 after 1000)
    last AS (SELECT recorded_at::text AS recorded_at, id::text AS id FROM examined ORDER BY examined.recorded_at DESC, examined.id DESC LIMIT 1)
    SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM examined)::int AS taken,
      (SELECT recorded_at FROM last) AS last_recorded_at, (SELECT id FROM last) AS last_id`,

  ap2_mandate_bindings: (sql: Sql, s: RetentionSettings, nowMs: number, batch: number) => sql`
    DELETE FROM bridge_sessions WHERE id IN (
      SELECT id FROM bridge_sessions
      -- the predicate of the partial index bridge_sessions_ap2_expiry; 'infinity' and NULL never match
      WHERE protocol = 'ap2' AND mandate_expires_at < ${new Date(nowMs - days(s, "RETENTION_AP2_MANDATE_GRACE_DAYS") * DAY_MS)}
        -- expired by the database's clock too, whatever the job host's clock says (review RB-3)
        AND mandate_expires_at < now()
      LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,

  ap2_mandate_agents: (sql: Sql, s: RetentionSettings, nowMs: number, batch: number) => sql`
    DELETE FROM ap2_mandate_agents WHERE (thumbprint, payment_mandate_id) IN (
      SELECT thumbprint, payment_mandate_id FROM ap2_mandate_agents
      -- the partial index ap2_mandate_agents_expiry
      WHERE expires_at < ${new Date(nowMs - days(s, "RETENTION_AP2_MANDATE_GRACE_DAYS") * DAY_MS)} AND expires_at < now()
      LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,

  sold_stock_reservations: (sql: Sql, s: RetentionSettings, nowMs: number, batch: number) => sql`
    DELETE FROM stock_reservations WHERE id IN (
      SELECT r.id FROM stock_reservations r
      JOIN orders o ON o.id = r.order_id
      -- the predicate of the partial index stock_reservations_sold; the order's status is checked again so a row
      -- stamped by anything but the trigger's move is never taken while a cancel could still restock it
      WHERE r.status = 'committed' AND r.order_closed_at < ${new Date(nowMs - days(s, "RETENTION_RESERVATION_GRACE_DAYS") * DAY_MS)}
        AND o.status NOT IN ('pending', 'paid', 'fulfilled')
        AND (o.cart_id IS NULL OR NOT EXISTS (SELECT 1 FROM actor_reminders m WHERE m.kind = 'cart' AND m.id = o.cart_id::text))
      LIMIT ${batch} FOR UPDATE OF r SKIP LOCKED)`,
};

/**
 * A cart nothing uses any more, but for a protocol session naming it (each caller says how it treats those): OPEN,
 * EXPIRED, ABANDONED or REPLACED, its sliding expiry more than the cart grace ago, its checkout session (if any)
 * ended, nothing due for it, and no order or x402 row naming it. `st` is its actor_state row, `cartId` its id as uuid.
 * One condition for the cart rule and the bridge-session rule, so a session goes exactly when its cart may.
 */
function cartOutOfUse(sql: Sql, s: RetentionSettings, nowMs: number, st: SqlFragment, cartId: SqlFragment): SqlFragment {
  return sql`${st}.state->'cart'->>'status' IN ('OPEN', 'EXPIRED', 'ABANDONED', 'REPLACED')
          AND (${st}.state->'cart'->>'expiresAt')::bigint < ${nowMs - s.RETENTION_CART_GRACE_DAYS * DAY_MS}
          AND (jsonb_typeof(${st}.state->'session') IS DISTINCT FROM 'object'
               OR ${st}.state->'session'->>'status' IN ('COMPLETED', 'FAILED', 'EXPIRED', 'CANCELED'))
          AND NOT EXISTS (SELECT 1 FROM actor_reminders r WHERE r.kind = 'cart' AND r.id = ${st}.id)
          AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.cart_id = ${cartId})
          AND NOT EXISTS (SELECT 1 FROM x402_intents x WHERE x.cart_id = ${st}.id)
          AND NOT EXISTS (SELECT 1 FROM x402_authorizations x WHERE x.cart_id = ${st}.id)`;
}

/** One pass of every rule, batch after batch until each is done or the budget is spent. Returns deletions per rule. */
export async function runRetention(sql: Sql, s: RetentionSettings, nowMs: number, budgetMs = RUN_BUDGET_MS): Promise<Record<string, number>> {
  const until = Date.now() + budgetMs;
  const deleted: Record<string, number> = {};
  for (const [name, rule] of Object.entries(RETENTION_RULES)) {
    deleted[name] = 0;
    const state: RunState = {};
    for (;;) {
      const r = await rule(sql, s, nowMs, s.RETENTION_BATCH, state);
      const { deleted: n, taken } = typeof r === "number" ? { deleted: r, taken: r } : r;
      deleted[name] += n;
      if (taken < s.RETENTION_BATCH || Date.now() >= until) break;
    }
  }
  return deleted;
}

/**
 * What a run that deleted rows logs: each rule with rows deleted, as `{rule, rows}`. Not `{ [rule]: rows }`: the logger
 * redacts any field whose name looks like a secret's (infra/log.ts SECRET_FIELD), and `oauth_refresh_tokens` does, so
 * that count always read "[redacted]" (audit DZ-3). A rule's name is a value here, where only secret-looking values
 * are redacted.
 */
export function retentionLogFields(deleted: Record<string, number>): { deleted: { rule: string; rows: number }[] } {
  return { deleted: Object.entries(deleted).filter(([, n]) => n > 0).map(([rule, rows]) => ({ rule, rows })) };
}

/**
 * Runs the job once shortly after start (a random delay, so hosts started together do not run it in step) and then
 * every RETENTION_INTERVAL_MS; 0 turns it off. A failed run is logged and the next interval tries again. Returns the
 * stop, which waits for a run in progress.
 */
export function startRetention(sql: Sql, config: RetentionSettings & Pick<Config, "RETENTION_INTERVAL_MS">, log: Logger, now: () => number = Date.now): () => Promise<void> {
  if (config.RETENTION_INTERVAL_MS === 0) return async () => {};
  let running: Promise<unknown> | undefined;
  const run = () => {
    running ??= runRetention(sql, config, now())
      .then((deleted) => {
        if (Object.values(deleted).some((n) => n > 0)) log.info("data retention deleted rows", retentionLogFields(deleted));
      })
      .catch((err) => log.warn("data retention run failed", { error: err as Error }))
      .finally(() => (running = undefined));
  };
  const first = setTimeout(run, Math.floor(Math.random() * Math.min(60_000, config.RETENTION_INTERVAL_MS)));
  const timer = setInterval(run, config.RETENTION_INTERVAL_MS);
  for (const t of [first, timer]) (t as { unref?: () => void }).unref?.();
  return async () => {
    clearTimeout(first);
    clearInterval(timer);
    await running;
  };
}
