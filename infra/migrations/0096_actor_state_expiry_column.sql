-- The cart retention index reads a column of its own, so an actor turn's update of `actor_state` is HOT again (issue #6).
--
-- 0089's actor_state_cart_expiry indexed `state->'cart'->'expiresAt'` with a predicate on `state`: Postgres decides
-- HOT by the columns an index names (keys, expressions, predicate), so every update of `state`, every actor turn of
-- every kind, wrote a new entry into the primary key (3 non-HOT updates a checkout journey: docs/performance.md
-- sessions 14 and 15). The index now reads `expiry_ms`: a lower bound of the cart's sliding expiry (ms since the epoch)
-- while the cart is in a status the retention rule deletes (OPEN, EXPIRED, ABANDONED, REPLACED), which the turn's state
-- statement writes only when it must (actors/runtime/state-write.ts `EXPIRY_SLACK_MS`): when it is unset, above the
-- expiry, or more than an hour behind it. A turn that leaves it as it was is HOT (the state is not in any index now);
-- a cart paid or checking out leaves it as it was too, and the retention run that finds such a cart past its horizon
-- clears it (infra/retention.ts DELETE_STATEMENTS.carts), so a paid cart is examined once, not once a run.
--
-- The table's fillfactor goes to 70 (below): an update can be HOT only where its page has room for the new version.
--
-- Backfill: the carts 0089's index holds (its predicate, so the update walks that index, not the table) get their
-- expiry, rounded down (a lower bound), clamped to bigint. A cart CHECKOUT or COMPLETED keeps NULL: the rule never
-- deletes it, and the turn that opens it again writes the column. A host still running the previous code during a
-- rolling start writes carts without the column (a cart it creates, or opens again, has NULL until a turn of the new
-- code writes it); the UPDATE below, run again after the rollout, gives them theirs (it writes only those rows; without 0089's index
-- it reads the whole table).
--
-- Locks: ACCESS EXCLUSIVE on actor_state (the new column, the drop of 0089's index; the index build reads the
-- table), taken as 0087, 0089 and 0095 take theirs (review V1-1): waiting at most 150 ms at a time, so the actor
-- writes queued behind the waiting lock stall briefly, and tried again until the connection's lock_timeout (else 60 s);
-- then the migration fails with SQLSTATE 55P03 (lock_not_available), nothing changed, and the next start tries again.
-- While held, every actor write waits for the backfill and the build. On a large actor_state an operator first runs
-- `ALTER TABLE actor_state ADD COLUMN IF NOT EXISTS expiry_ms bigint` (a moment's lock), the UPDATE below (in batches
-- if need be: a row it already filled is skipped), and `CREATE INDEX CONCURRENTLY actor_state_cart_expiry_ms ...`
-- (the definition below): this migration then only fills the carts written since and drops 0089's index.
DO $$
DECLARE
  budget interval := COALESCE(NULLIF(current_setting('lock_timeout')::interval, interval '0'), interval '60 seconds');
  given_up timestamptz := clock_timestamp() + budget;
  restore text := current_setting('lock_timeout');
BEGIN
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '150ms', true);
      LOCK TABLE actor_state IN ACCESS EXCLUSIVE MODE;
      PERFORM set_config('lock_timeout', restore, true);
      EXIT;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
      IF clock_timestamp() >= given_up THEN
        PERFORM set_config('lock_timeout', restore, true);
        RAISE EXCEPTION 'could not lock actor_state within %', budget
          USING ERRCODE = 'lock_not_available',
            HINT = 'A long transaction holds actor_state (pg_stat_activity, pg_locks); start again once it ended.';
      END IF;
      PERFORM pg_sleep(0.1 + random() * 0.2);
    END;
  END LOOP;
  ALTER TABLE actor_state ADD COLUMN IF NOT EXISTS expiry_ms bigint;
  UPDATE actor_state
    SET expiry_ms = LEAST(GREATEST(floor((state->'cart'->'expiresAt')::numeric), -9223372036854775808), 9223372036854775807)::bigint
    WHERE kind = 'cart'
      AND jsonb_typeof(state->'cart'->'expiresAt') = 'number'
      AND state->'cart'->>'status' IN ('OPEN', 'EXPIRED', 'ABANDONED', 'REPLACED')
      AND expiry_ms IS NULL;
  -- built CONCURRENTLY beforehand: kept (a build that failed leaves an invalid index: made again)
  IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('actor_state_cart_expiry_ms') AND indisvalid) THEN
    DROP INDEX IF EXISTS actor_state_cart_expiry_ms;
    CREATE INDEX actor_state_cart_expiry_ms ON actor_state (expiry_ms, id) WHERE kind = 'cart' AND expiry_ms IS NOT NULL;
  END IF;
  DROP INDEX IF EXISTS actor_state_cart_expiry;
  -- A HOT update needs room for the new version on the row's own page: a cart row is ~1.9 kB, so a page filled to the
  -- brim by inserts (fillfactor 100: four carts) has none, and a turn soon after a cart's creation moved it to another
  -- page (non-HOT: 59-66 % of a journey's updates were HOT at 100, 84 % at 70, 89 % at 50; docs/performance.md
  -- "Session 15"). Pages written from now on are filled to 70 %; pages already full stay as they are.
  ALTER TABLE actor_state SET (fillfactor = 70);
END $$;
