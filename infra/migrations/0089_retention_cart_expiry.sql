-- The cart retention rule's scan (infra/retention.ts DELETE_STATEMENTS.carts; docs/review.md session 10 "Known and
-- left": it walked every cart on each batch, ~0.5 s a run at 50,000 carts). This partial index holds only carts in a
-- status the rule deletes (OPEN, EXPIRED, ABANDONED, REPLACED: never CHECKOUT or COMPLETED, so no paid cart), by
-- their sliding expiry and id. The rule reads it as a keyset (`expiresAt < horizon`, after the last key the run
-- examined), so a run visits the carts due once each, never a live cart nor a paid one.
--
-- The key is the jsonb value, not a cast to bigint: a cast that failed on some odd value would refuse that cart's
-- every write; `jsonb_typeof(...) = 'number'` keeps other values out, and jsonb orders numbers numerically.
--
-- Cost (/tmp/notes/S-decisions.md): an index whose expression reads `state` makes every update of `actor_state`
-- a non-HOT one (Postgres looks at the columns, not the predicate), one more entry in the primary key per actor write;
-- only a cart's writes in those statuses add an entry here. Building it takes a SHARE lock on `actor_state` (actor
-- writes wait) for as long as it reads the carts: on a large table an operator may build it first with
-- `CREATE INDEX CONCURRENTLY actor_state_cart_expiry ...` (the same definition below); this migration then finds it
-- and takes no lock at all.
--
-- The lock is taken as 0087 takes its own (review V1-1): waiting at most 150 ms at a time, so actor writes queued
-- behind the waiting lock stall briefly, and tried again until the connection's lock_timeout (else 60 s).
DO $$
DECLARE
  budget interval := COALESCE(NULLIF(current_setting('lock_timeout')::interval, interval '0'), interval '60 seconds');
  given_up timestamptz := clock_timestamp() + budget;
  restore text := current_setting('lock_timeout');
BEGIN
  -- built CONCURRENTLY beforehand: nothing to do (a build that failed leaves an invalid index: made again below)
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('actor_state_cart_expiry') AND indisvalid) THEN
    RETURN;
  END IF;
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '150ms', true);
      LOCK TABLE actor_state IN SHARE MODE;
      PERFORM set_config('lock_timeout', restore, true);
      EXIT;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
      IF clock_timestamp() >= given_up THEN
        PERFORM set_config('lock_timeout', restore, true);
        RAISE EXCEPTION 'could not lock actor_state within %', budget
          USING ERRCODE = 'lock_not_available',
            HINT = 'A long transaction holds actor_state (pg_stat_activity, pg_locks); start again once it ended, or build actor_state_cart_expiry CONCURRENTLY first.';
      END IF;
      PERFORM pg_sleep(0.1 + random() * 0.2);
    END;
  END LOOP;
  DROP INDEX IF EXISTS actor_state_cart_expiry;
  CREATE INDEX actor_state_cart_expiry ON actor_state ((state->'cart'->'expiresAt'), id)
    WHERE kind = 'cart'
      AND jsonb_typeof(state->'cart'->'expiresAt') = 'number'
      AND state->'cart'->>'status' IN ('OPEN', 'EXPIRED', 'ABANDONED', 'REPLACED');
END $$;
