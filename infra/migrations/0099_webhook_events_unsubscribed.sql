-- An outbox event of a store without a webhook endpoint is written dispatched (issue #6).
--
-- The fan-out (actors/webhook/dispatcher.ts fanOutOutbox) finds the events to fan out through the partial index
-- webhook_events_undispatched (WHERE dispatched_at IS NULL) and marks each one dispatched. With `dispatched_at` in that
-- predicate the marking update is never HOT: for a store with no endpoint (most stores, and the checkout bench's) each
-- order change cost an entry in the partial index, a second row version, a primary-key entry for it, the fan-out's
-- locking read and vacuum's removal of all of it (2 inserts + 2 non-HOT updates of webhook_events a checkout journey:
-- docs/performance.md "Session 15"), to produce no delivery. A column the fan-out reads has to be in some index and
-- the fan-out has to clear it, so the update cannot become HOT; what can go is the update itself, where it does nothing.
--
-- This trigger sets `dispatched_at` on insert when the store has no endpoint (deleted_at IS NULL; enabled or not, for
-- any events: a store with one leaves the event to the fan-out, whose rules for kinds and disabled endpoints stay the
-- only ones). Such an event is what the fan-out would have made of it: dispatched, no delivery, deleted by retention
-- RETENTION_WEBHOOK_EVENT_DAYS after `dispatched_at`. What differs: an endpoint created while an order's statement runs
-- (committed after that statement began) does not get that order's event; the fan-out gave it the events still
-- undispatched when it first saw the endpoint, up to ~200 ms older than its creation. An endpoint gets the events of
-- changes made after it was created, as docs/webhooks.md says.
--
-- Lock: CREATE TRIGGER takes SHARE ROW EXCLUSIVE on webhook_events (orders' writes insert there and wait), taken as
-- 0087, 0089, 0095 take theirs (review V1-1): at most 150 ms at a time, until the connection's lock_timeout (else
-- 60 s), then SQLSTATE 55P03 and nothing changed.
CREATE OR REPLACE FUNCTION webhook_event_unsubscribed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.dispatched_at IS NULL
     AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.store_slug = NEW.store_slug AND e.deleted_at IS NULL) THEN
    NEW.dispatched_at := statement_timestamp();
  END IF;
  RETURN NEW;
END $$;

DO $$
DECLARE
  budget interval := COALESCE(NULLIF(current_setting('lock_timeout')::interval, interval '0'), interval '60 seconds');
  given_up timestamptz := clock_timestamp() + budget;
  restore text := current_setting('lock_timeout');
BEGIN
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '150ms', true);
      LOCK TABLE webhook_events IN SHARE ROW EXCLUSIVE MODE;
      PERFORM set_config('lock_timeout', restore, true);
      EXIT;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
      IF clock_timestamp() >= given_up THEN
        PERFORM set_config('lock_timeout', restore, true);
        RAISE EXCEPTION 'could not lock webhook_events within %', budget
          USING ERRCODE = 'lock_not_available',
            HINT = 'A long transaction holds webhook_events (pg_stat_activity, pg_locks); start again once it ended.';
      END IF;
      PERFORM pg_sleep(0.1 + random() * 0.2);
    END;
  END LOOP;
  DROP TRIGGER IF EXISTS webhook_events_unsubscribed ON webhook_events;
  CREATE TRIGGER webhook_events_unsubscribed BEFORE INSERT ON webhook_events
    FOR EACH ROW EXECUTE FUNCTION webhook_event_unsubscribed();
END $$;
