-- Retention for the two kinds of rows that grew for ever (docs/review.md session 10 "Known and left"): AP2 mandate
-- bindings and committed stock reservations. The rules are in infra/retention.ts; docs/operations.md "Data retention".

-- Locks first, all four, before any change (review V1-1). The runner applies this file in one transaction, so every
-- lock below lasts until it commits: this file only changes the schema (a fraction of a second on any size); the
-- backfill of closed orders is 0088, in its own transaction, which takes only row locks. The service takes these
-- tables in both orders (a paid order's cancel or refund writes `orders`, then `stock_reservations`; a pending order's
-- cancel and a settle write `stock_reservations`, then `orders`), so no fixed order alone avoids a deadlock with it.
-- Instead the migration never waits long while it holds one: each attempt takes `orders` first (as the paid-order cancel
-- and refund do: they already hold it when they reach `stock_reservations`), waiting at most 400 ms while it holds
-- none, then the other three waiting at most 150 ms each; a refusal gives back what the attempt took (the block's
-- subtransaction rolls back) and the attempt is made again shortly after. Each wait stays below Postgres's default
-- deadlock_timeout (1 s), so a transaction that waits on the migration is let through before a deadlock check would
-- pick a victim, and checkout queued behind a waiting lock stalls well under a second at a time. The whole wait is
-- bounded by the connection's lock_timeout when one is set (ALTER ROLE/DATABASE … SET lock_timeout, PGOPTIONS), else
-- 60 s; then the migration fails with SQLSTATE 55P03 (lock_not_available), nothing changed, and the next start tries
-- again (docs/operations.md "Start order").
DO $$
DECLARE
  budget interval := COALESCE(NULLIF(current_setting('lock_timeout')::interval, interval '0'), interval '60 seconds');
  given_up timestamptz := clock_timestamp() + budget;
  restore text := current_setting('lock_timeout');
BEGIN
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '400ms', true);
      LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE;
      PERFORM set_config('lock_timeout', '150ms', true);
      LOCK TABLE stock_reservations IN ACCESS EXCLUSIVE MODE;
      LOCK TABLE bridge_sessions IN ACCESS EXCLUSIVE MODE;
      LOCK TABLE ap2_mandate_agents IN ACCESS EXCLUSIVE MODE;
      PERFORM set_config('lock_timeout', restore, true);
      RETURN;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
      IF clock_timestamp() >= given_up THEN
        PERFORM set_config('lock_timeout', restore, true);
        RAISE EXCEPTION 'could not lock orders, stock_reservations, bridge_sessions and ap2_mandate_agents within %', budget
          USING ERRCODE = 'lock_not_available',
            HINT = 'A long transaction holds one of them (pg_stat_activity, pg_locks); start again once it ended.';
      END IF;
      PERFORM pg_sleep(0.1 + random() * 0.2);
    END;
  END LOOP;
END $$;

-- AP2: the last instant a mandate as presented could still be accepted for a cart that is not paid yet: the earliest of
-- its signed expiries (intent_expiry, cart_expiry, the user authorization's `exp`), 'infinity' when it has none (a
-- mandate need not expire: such a binding is kept for ever), NULL for a binding written before this migration (its
-- expiry was never recorded: kept for ever too). Written when the mandate is bound (gateway/bridge/common.ts
-- `bindMandate`, ap2-auth.ts `claimMandate`); every later presentation whose signature verifies moves it later if its
-- own is later (the user signed the same mandate id again), never earlier, and NULL stays NULL.
-- `bridge_sessions.mandate_expires_at` is the cart binding's (per agent key and mandate id), `ap2_mandate_agents.expires_at`
-- the claim's (per signer key and mandate id): each is deleted RETENTION_AP2_MANDATE_GRACE_DAYS after it.
ALTER TABLE bridge_sessions ADD COLUMN mandate_expires_at timestamptz;
ALTER TABLE ap2_mandate_agents ADD COLUMN expires_at timestamptz;
-- Each rule's scan: `< horizon` reads only the expired rows (NULL ones are left out; 'infinity' sorts after any horizon).
CREATE INDEX bridge_sessions_ap2_expiry ON bridge_sessions (mandate_expires_at) WHERE protocol = 'ap2' AND mandate_expires_at IS NOT NULL;
CREATE INDEX ap2_mandate_agents_expiry ON ap2_mandate_agents (expires_at) WHERE expires_at IS NOT NULL;

-- Committed stock reservations: a committed row is read after the sale only to give its units back, when the merchant
-- cancels the order (paid or fulfilled) or a full refund lands while it is paid (actors/store/refund-flow.ts
-- `returnSoldStock`). Once the order has left paid and fulfilled (shipped, delivered, refunded, canceled; no move leads
-- back, order-machine.ts) nothing gives those units back any more. `order_closed_at` records when that happened, set by
-- the trigger below for whichever writer moves the order, so the rule's index holds only rows whose order closed (an
-- order a merchant never ships stays paid, possibly for ever: its row is needed, and with a plain index on committed rows
-- every batch walked all of them; review RG-4's cost).
ALTER TABLE stock_reservations ADD COLUMN order_closed_at timestamptz;
CREATE FUNCTION stock_reservations_order_closed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE stock_reservations SET order_closed_at = now() WHERE order_id = NEW.id AND status = 'committed' AND order_closed_at IS NULL;
  RETURN NULL;
END $$;
CREATE TRIGGER orders_restock_closed AFTER UPDATE OF status ON orders
  FOR EACH ROW WHEN (OLD.status IN ('paid', 'fulfilled') AND NEW.status NOT IN ('pending', 'paid', 'fulfilled'))
  EXECUTE FUNCTION stock_reservations_order_closed();
-- Orders closed before this migration are stamped by 0088 (its own transaction: a long UPDATE here held every lock
-- above for its whole run, about 28 s per million sold reservations; review V1-1), applied right after this file by
-- the same start-up. The index is built here, while the column is still empty: one scan of the table, no entries.
CREATE INDEX stock_reservations_sold ON stock_reservations (order_closed_at) WHERE status = 'committed' AND order_closed_at IS NOT NULL;

-- A `returned` reservation (its units given back by returnSoldStock; its order canceled or refunded, both final) is no
-- longer kept as its order's last attempt (infra/retention.ts `last_attempt`): 0088 clears the marks 0085's rule gave
-- such rows, with the backfill.
