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
 *    deleted cart reads as CART_NOT_FOUND, the answer an expired one already gets.
 *  - `webhook_events`: dispatched events that got no delivery (the store had no endpoint subscribed), older than
 *    RETENTION_WEBHOOK_EVENT_DAYS. Events with a delivery stay: the dashboard's delivery list shows them and any
 *    delivery can be redelivered from its event's payload (a delivery-history retention is a product choice).
 *  - `oauth_clients` (audit W-1; the rule is gateway/oauth/clients.ts `deleteUnusedClients`, next to the stamping of
 *    a client's use): registered clients without an owner that no user authorized within 24 h of registering, or
 *    unused for 31 days (a refresh token's life and a day). Clients registered with a user session stay.
 */
import { deleteUnusedClients } from "../gateway/oauth/clients.ts";
import type { Config } from "./config.ts";
import type { Sql } from "./db.ts";
import type { Logger } from "./log.ts";
import { UUID_HEX } from "./uuid.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
/** A run stops starting new batches after this long; the next interval goes on where it stopped. */
const RUN_BUDGET_MS = 60_000;

export type RetentionSettings = Pick<Config, "RETENTION_BATCH" | "RETENTION_OAUTH_GRACE_DAYS" | "RETENTION_CART_GRACE_DAYS" | "RETENTION_WEBHOOK_EVENT_DAYS">;

/** One rule: deletes at most `batch` rows whose time has come at `nowMs`, returns how many it deleted. */
type Rule = (sql: Sql, s: RetentionSettings, nowMs: number, batch: number) => Promise<number>;

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

  async carts(sql, s, nowMs, batch) {
    const res = await sql`
      DELETE FROM actor_state WHERE kind = 'cart' AND id IN (
        SELECT st.id FROM actor_state st
        -- every cart id is a uuid (the create message's); the CASE keeps the cast from ever seeing another id
        CROSS JOIN LATERAL (SELECT CASE WHEN st.id ~* ${UUID} THEN st.id::uuid END AS cart_id) c
        WHERE st.kind = 'cart' AND c.cart_id IS NOT NULL
          AND st.state->'cart'->>'status' IN ('OPEN', 'EXPIRED', 'ABANDONED', 'REPLACED')
          AND (st.state->'cart'->>'expiresAt')::bigint < ${nowMs - s.RETENTION_CART_GRACE_DAYS * DAY_MS}
          AND (jsonb_typeof(st.state->'session') IS DISTINCT FROM 'object'
               OR st.state->'session'->>'status' IN ('COMPLETED', 'FAILED', 'EXPIRED', 'CANCELED'))
          AND NOT EXISTS (SELECT 1 FROM actor_reminders r WHERE r.kind = 'cart' AND r.id = st.id)
          AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.cart_id = c.cart_id)
          AND NOT EXISTS (SELECT 1 FROM bridge_sessions b WHERE b.cart_id = c.cart_id)
          AND NOT EXISTS (SELECT 1 FROM x402_intents x WHERE x.cart_id = st.id)
          AND NOT EXISTS (SELECT 1 FROM x402_authorizations x WHERE x.cart_id = st.id)
        LIMIT ${batch} FOR UPDATE OF st SKIP LOCKED)`;
    return res.count;
  },

  async webhook_events(sql, s, nowMs, batch) {
    const res = await sql`
      DELETE FROM webhook_events WHERE id IN (
        SELECT e.id FROM webhook_events e
        WHERE e.dispatched_at IS NOT NULL AND e.dispatched_at < ${new Date(nowMs - s.RETENTION_WEBHOOK_EVENT_DAYS * DAY_MS)}
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
        LIMIT ${batch} FOR UPDATE OF e SKIP LOCKED)`;
    return res.count;
  },

  oauth_clients: (sql, _s, nowMs, batch) => deleteUnusedClients(sql, nowMs, batch),
};

/** One pass of every rule, batch after batch until each is done or the budget is spent. Returns deletions per rule. */
export async function runRetention(sql: Sql, s: RetentionSettings, nowMs: number, budgetMs = RUN_BUDGET_MS): Promise<Record<string, number>> {
  const until = Date.now() + budgetMs;
  const deleted: Record<string, number> = {};
  for (const [name, rule] of Object.entries(RETENTION_RULES)) {
    deleted[name] = 0;
    for (;;) {
      const n = await rule(sql, s, nowMs, s.RETENTION_BATCH);
      deleted[name] += n;
      if (n < s.RETENTION_BATCH || Date.now() >= until) break;
    }
  }
  return deleted;
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
        if (Object.values(deleted).some((n) => n > 0)) log.info("data retention deleted rows", { deleted });
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
