/**
 * What one caller may hold (audit X-3): checked by the cart before a payment attempt takes any stock hold.
 *
 * - A key the merchant blocked (`store_agent_allowlist.status = 'blocked'`) is refused checkout at that store:
 *   403 NOT_ELIGIBLE, `details.reason: agent_blocked_by_merchant`, `details.merchant_slugs`. The allowlist gated
 *   refund requests only, so a blocked key could go on taking the store's stock off sale.
 * - A caller (agent key or OAuth principal: the cart's `keyId`) holds stock unpaid in at most
 *   CHECKOUT_MAX_PENDING_APPROVALS checkout sessions at once (other than the one paying now): sessions waiting for
 *   the buyer's approval, or holding unpaid for some other reason, for longer than IN_FLIGHT_GRACE_SECONDS. A hold
 *   younger than that is a payment still running (a card charge answers in seconds, an x402 settle within about
 *   41 s) and does not count: an agent serving many buyers at once runs dozens of payments concurrently, which is
 *   what the per-key rate limits bound, not this (a CI run saw the 21st of 40 concurrent MOCK checkouts of one key
 *   refused). One more is refused before its hold with 429
 *   rate_limit_exceeded, `details.reason: pending_approval_limit`, the limit, the count and the sessions holding;
 *   one ends when its buyer approves or refuses, when the caller cancels it, or when its approval expires
 *   (CHECKOUT_APPROVAL_HOLD_MS), and `details.retry_after_seconds` says when the earliest of them expires at the latest.
 *
 * Counted from the store rows (pending orders with a held reservation, one per session and store) so that every
 * cart of the caller counts, whichever actor host runs it. A check, not a lock: two carts of one caller starting at
 * the same instant may both pass; the bound is about hours of holds, not a race of milliseconds. Read in the same
 * statement as the attempt's catalog and risk inputs (`holdGuardColumns`), checked after the state check, before the
 * risk gate and the hold.
 */
import type { Sql } from "../../infra/db.ts";
import { fail } from "../runtime/errors.ts";

/**
 * How old a held, unpaid checkout must be before it counts against the caller's bound: past the longest payment
 * call (x402's ask timeout, 41 s with the defaults), so only waits for the buyer, unknown payments and stuck holds
 * count. The bound is then at most the limit plus what the caller's rate limit lets it start within this window.
 */
export const IN_FLIGHT_GRACE_SECONDS = 60;

export interface HoldGuardRead {
  /** The stores among those asked at which the merchant blocked this key. */
  blockedAt: string[];
  /** The caller's other checkout sessions holding stock unpaid. */
  holding: { sessionId: string; heldSince: number }[];
}

/** What the guard asks about: this caller, the session paying now (not counted) and the stores of its unpaid legs. */
export interface HoldGuardAsk {
  keyId: string;
  sessionId: string;
  storeSlugs: readonly string[];
}

/** The guard's two columns as the database returns them (see `holdGuardColumns`). */
export interface HoldGuardColumns {
  guard_blocked: string[] | null;
  guard_holding: { s: string; t: string }[] | null;
}

/**
 * The guard's read as two extra columns (scalar subqueries, evaluated once per statement as InitPlans) of the
 * completion's catalog-and-risk read (actors/store/commerce.ts `riskColumns`): no statement of its own per payment
 * attempt. Parsed by `holdGuardOf`.
 *
 * Bounded by the caller's holds, not its history nor everyone's holds: the held reservations come from the partial
 * index stock_reservations_key_held (migration 0095: held reservations by their order's key, which the hold writes on
 * the row), and each one's order by its id. 0092's index of pending orders served the same read but made the pay
 * update of every order non-HOT (`status` in its predicate): docs/performance.md sessions 13 and 14. The order still
 * decides what counts (pending, of this key, of another session, of the last two days); the reservation's key only
 * finds it, and is its order's key (actors/store/commerce.ts `beginLegRows`).
 */
export function holdGuardColumns(sql: Sql, ask: HoldGuardAsk) {
  const slugs = [...new Set(ask.storeSlugs)];
  return sql`(SELECT array_agg(a.store_slug ORDER BY a.store_slug) FROM store_agent_allowlist a
        WHERE a.agent_key_id = ${ask.keyId}::uuid AND a.status = 'blocked' AND a.store_slug = ANY(${slugs}::text[])) AS guard_blocked,
      (SELECT json_agg(json_build_object('s', h.checkout_session_id, 't', h.since) ORDER BY h.since) FROM (
        SELECT o.checkout_session_id, min(r.created_at) AS since
        FROM stock_reservations r JOIN orders o ON o.id = r.order_id
        WHERE r.agent_key_id = ${ask.keyId}::uuid AND r.status = 'held'
          AND o.agent_key_id = ${ask.keyId}::uuid AND o.status = 'pending' AND o.checkout_session_id IS NOT NULL
          AND o.checkout_session_id <> ${ask.sessionId} AND o.created_at > now() - interval '2 days'
        GROUP BY o.checkout_session_id
        HAVING min(r.created_at) < now() - make_interval(secs => ${IN_FLIGHT_GRACE_SECONDS})) h) AS guard_holding`;
}

export function holdGuardOf(row: HoldGuardColumns | undefined): HoldGuardRead {
  return {
    blockedAt: row?.guard_blocked ?? [],
    holding: (row?.guard_holding ?? []).map((h) => ({ sessionId: h.s, heldSince: Date.parse(h.t) })),
  };
}

/** Throws the refusal the guard read calls for, or returns. */
export function assertMayHold(read: HoldGuardRead, opts: { sessionId: string; maxPendingApprovals: number; approvalHoldMs: number; now: number }): void {
  if (read.blockedAt.length > 0) {
    throw fail("NOT_ELIGIBLE", `The merchant ${read.blockedAt.join(", ")} has blocked this agent key; it cannot check out at that store.`, {
      reason: "agent_blocked_by_merchant",
      merchant_slugs: read.blockedAt,
      checkout_session_id: opts.sessionId,
    });
  }
  if (read.holding.length >= opts.maxPendingApprovals) {
    const earliest = Math.min(...read.holding.map((h) => h.heldSince));
    // A session's approval runs from its hold plus the processor's answer: the earliest expires by then at the latest.
    const retryAfter = Math.max(1, Math.ceil((earliest + opts.approvalHoldMs - opts.now) / 1000));
    throw fail(
      "rate_limit_exceeded",
      `This caller already has ${read.holding.length} checkouts holding stock while they wait for the buyer's approval (at most ${opts.maxPendingApprovals} at once). Let the buyer approve, or cancel one, before starting another.`,
      {
        reason: "pending_approval_limit",
        limit: opts.maxPendingApprovals,
        holding: read.holding.length,
        checkout_session_ids: read.holding.map((h) => h.sessionId),
        retry_after_seconds: retryAfter,
        checkout_session_id: opts.sessionId,
      },
    );
  }
}
