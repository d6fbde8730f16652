-- 0099's trigger holds its "no endpoint" answer until the order's commit (review X, finding X-1).
--
-- 0099 decided "this store has no endpoint" when the event row was inserted. The order's transaction may run on for a
-- while after that insert (the statement's waits for product and coupon rows, the later legs of a multi-store hold,
-- the rest of the turn), and an endpoint created (POST …/webhooks answered 201) in that window never got an order
-- change that committed after it existed: the event was already dispatched, so the fan-out never read it. Before 0099
-- the fan-out read the event after the commit and made that delivery.
--
-- `register` (actors/webhook/index.ts WEBHOOK_CAP_LOCK) takes pg_advisory_xact_lock(0x5eb0 = 24240, hashtext(slug)),
-- as the first statement of its turn's transaction, and holds it to its commit. The trigger now takes the SHARED form
-- of that lock before marking an event dispatched, and holds it to the order's commit:
--  - granted: no registration of the store is in progress or queued; a later one waits for this order's commit, so it
--    commits after the order's change and is owed nothing. The check runs again after the grant (a new snapshot per
--    statement, READ COMMITTED) so a registration that committed since the first check is seen, and the event is
--    left to the fan-out;
--  - not granted (a registration holds the lock or waits for it): the event is left undispatched and the fan-out,
--    which reads it after the order's commit, delivers it to whatever endpoint exists then (the behaviour before 0099).
-- It is the non-waiting form (pg_try_advisory_xact_lock_shared): an order never waits for a registration. With the
-- waiting form a queued registration made a second order of the store queue behind it while that order held a product
-- row the first one needed: a 40P01 deadlock. A registration waits only for the orders that already hold the shared
-- lock (a try against a queued exclusive request is refused, so new orders do not prolong its wait), and it holds no
-- other lock while it waits (the advisory lock is its transaction's first statement).
-- The lock is taken only when the first check found no endpoint; an order's transaction takes it once per store (a
-- second insert finds it held). It lives in the lock table (shared memory) and writes no WAL.
--
-- Result: an endpoint gets the event of every order change that commits after its creation committed (the 201).
--
-- Lock: CREATE OR REPLACE FUNCTION changes only the function's catalog row; it takes no lock on webhook_events and
-- waits for no order. A transaction that already ran 0099's body keeps what it decided; the next insert runs this one.
CREATE OR REPLACE FUNCTION webhook_event_unsubscribed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Three statements, not one expression: the re-check needs its own snapshot, taken after the lock was granted (and
  -- SQL does not promise the order in which one expression's AND operands run).
  IF NEW.dispatched_at IS NULL
     AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.store_slug = NEW.store_slug AND e.deleted_at IS NULL) THEN
    IF pg_try_advisory_xact_lock_shared(24240 /* 0x5eb0: register's WEBHOOK_CAP_LOCK */, hashtext(NEW.store_slug)) THEN
      IF NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.store_slug = NEW.store_slug AND e.deleted_at IS NULL) THEN
        NEW.dispatched_at := statement_timestamp();
      END IF;
    END IF;
  END IF;
  RETURN NEW;
END $$;
