-- The approval-hold guard (actors/cart/hold-guard.ts holdGuardColumns, in every payment attempt's risk read) counts the
-- caller's checkouts holding stock unpaid: its pending orders with a held reservation. 0092 found those orders through a
-- partial index of pending orders (orders_agent_key_pending, WHERE status = 'pending'); with `status` in an index
-- predicate the update that pays, cancels or fails an order is never HOT, so every paid checkout wrote an entry into
-- each of orders' indexes (+8 WAL records a journey: docs/performance.md sessions 13 and 14).
--
-- The guard now starts where the hold lives: the reservation row records its order's key (agent_key_id, written with
-- the hold: actors/store/commerce.ts), and stock_reservations_key_held holds the held reservations by key, so the
-- guard reads the caller's held reservations (a handful however many orders it paid), then each one's order by id.
-- orders_agent_key_pending has no reader left and is dropped: the pay update is HOT again. What this costs instead:
-- one entry here per reservation written held (tracked stock only; untracked stock writes no reservation), none for
-- its settle or release (stock_reservations_held already names `status`, so those updates were never HOT).
--
-- Held reservations written before this migration get their order's key below (held rows are the payments running
-- and the waits: few). A host still running the previous code during a rolling start writes held rows without a key,
-- which the guard does not count until they end (docs/review.md, session 14).
--
-- Locks: ACCESS EXCLUSIVE on stock_reservations (the new column; the index build reads the whole table) and on orders
-- (dropping its index), both taken together in each try, as 0087, 0089 and 0092 take theirs (review V1-1): waiting at
-- most 150 ms at a time, so the checkout writes queued behind the waiting locks stall briefly, and tried again until the
-- connection's lock_timeout (else 60 s); then the migration fails with SQLSTATE 55P03 (lock_not_available), nothing
-- changed, and the next start tries again. Taken together, a failed try holds neither, so a checkout that holds one
-- table and waits for the other is never stuck behind the migration. On a large stock_reservations an operator may
-- first run `ALTER TABLE stock_reservations ADD COLUMN agent_key_id uuid` and `CREATE INDEX CONCURRENTLY
-- stock_reservations_key_held ...` (the definition below): the build is then skipped and the locks are held only for
-- the backfill of the held rows and the drop.
DO $$
DECLARE
  budget interval := COALESCE(NULLIF(current_setting('lock_timeout')::interval, interval '0'), interval '60 seconds');
  given_up timestamptz := clock_timestamp() + budget;
  restore text := current_setting('lock_timeout');
BEGIN
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '150ms', true);
      LOCK TABLE stock_reservations, orders IN ACCESS EXCLUSIVE MODE;
      PERFORM set_config('lock_timeout', restore, true);
      EXIT;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
      IF clock_timestamp() >= given_up THEN
        PERFORM set_config('lock_timeout', restore, true);
        RAISE EXCEPTION 'could not lock stock_reservations and orders within %', budget
          USING ERRCODE = 'lock_not_available',
            HINT = 'A long transaction holds stock_reservations or orders (pg_stat_activity, pg_locks); start again once it ended.';
      END IF;
      PERFORM pg_sleep(0.1 + random() * 0.2);
    END;
  END LOOP;
  ALTER TABLE stock_reservations ADD COLUMN IF NOT EXISTS agent_key_id uuid;
  UPDATE stock_reservations r SET agent_key_id = o.agent_key_id
    FROM orders o
    WHERE r.status = 'held' AND r.agent_key_id IS NULL AND o.id = r.order_id AND o.agent_key_id IS NOT NULL;
  -- built CONCURRENTLY beforehand: kept (a build that failed leaves an invalid index: made again)
  IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('stock_reservations_key_held') AND indisvalid) THEN
    DROP INDEX IF EXISTS stock_reservations_key_held;
    CREATE INDEX stock_reservations_key_held ON stock_reservations (agent_key_id) WHERE status = 'held' AND agent_key_id IS NOT NULL;
  END IF;
  DROP INDEX IF EXISTS orders_agent_key_pending;
END $$;
