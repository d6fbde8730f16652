-- The approval-hold guard's read (actors/cart/hold-guard.ts holdGuardColumns, in every payment attempt's risk read):
-- the caller's pending orders of the last two days. Over orders_agent_key (agent_key_id, created_at DESC) it walked
-- every order of the key in those two days, paid ones included, so its cost grew with the key's volume (performance.md
-- session 13: ~0.5-1 µs of Postgres CPU per order). This partial index holds only pending orders, by key and creation,
-- so the guard reads the key's pending orders of the window and nothing else: a handful, however many it paid.
--
-- Cost: an order enters it when created pending. `status` is in the predicate, so the update that pays, cancels or
-- fails an order is never HOT any more (it was mostly HOT): that update now adds an entry to each of orders' indexes
-- (docs/performance.md; no partial index can tell pending orders apart without `status`). Building it takes a SHARE
-- lock on `orders` (every checkout's writes wait) for as long as it reads the table: on a large table an operator may
-- build it first with `CREATE INDEX CONCURRENTLY orders_agent_key_pending ...` (the same definition below); this
-- migration then finds it and takes no lock at all.
--
-- The lock is taken as 0087 and 0089 take theirs (review V1-1): waiting at most 150 ms at a time, so checkout writes
-- queued behind the waiting lock stall briefly, and tried again until the connection's lock_timeout (else 60 s); then
-- the migration fails with SQLSTATE 55P03 (lock_not_available), nothing changed, and the next start tries again.
DO $$
DECLARE
  budget interval := COALESCE(NULLIF(current_setting('lock_timeout')::interval, interval '0'), interval '60 seconds');
  given_up timestamptz := clock_timestamp() + budget;
  restore text := current_setting('lock_timeout');
BEGIN
  -- built CONCURRENTLY beforehand: nothing to do (a build that failed leaves an invalid index: made again below)
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('orders_agent_key_pending') AND indisvalid) THEN
    RETURN;
  END IF;
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '150ms', true);
      LOCK TABLE orders IN SHARE MODE;
      PERFORM set_config('lock_timeout', restore, true);
      EXIT;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
      IF clock_timestamp() >= given_up THEN
        PERFORM set_config('lock_timeout', restore, true);
        RAISE EXCEPTION 'could not lock orders within %', budget
          USING ERRCODE = 'lock_not_available',
            HINT = 'A long transaction holds orders (pg_stat_activity, pg_locks); start again once it ended, or build orders_agent_key_pending CONCURRENTLY first.';
      END IF;
      PERFORM pg_sleep(0.1 + random() * 0.2);
    END;
  END LOOP;
  DROP INDEX IF EXISTS orders_agent_key_pending;
  CREATE INDEX orders_agent_key_pending ON orders (agent_key_id, created_at) WHERE status = 'pending';
END $$;
