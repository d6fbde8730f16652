-- The webhook fan-out reads a watermark over the writing transactions' ids instead of marking each event (issue #6).
--
-- The fan-out (actors/webhook/dispatcher.ts fanOutOutbox) found the events of stores with endpoints through the partial
-- index webhook_events_undispatched and marked each one dispatched: an update that is never HOT (`dispatched_at` is in
-- that index's predicate), 2 a checkout of such a store, plus the row lock of its FOR UPDATE read and vacuum's removal
-- of the old versions. 0099/0100 took it away for stores without an endpoint; this takes it away for the others.
--
-- Each event now records the id of the transaction that wrote it (`fanout_xid`, pg_current_xact_id(): the top-level
-- transaction, whose commit makes the row visible), and one row, webhook_fanout_cursor.done_below, says which events
-- were fanned out: every event of a store with an endpoint (dispatched_at IS NULL) whose fanout_xid is below it. A
-- fan-out run takes the window [done_below, xmin) where xmin is the oldest transaction in progress at its own
-- statement's snapshot (pg_snapshot_xip(pg_current_snapshot())), leaving out those pg_stat_activity shows running in
-- another database of the cluster: every transaction of this database with an id below xmin has ended, so each event
-- written by one that committed is visible to the statement, and an event of a transaction still running (or of one
-- that starts later: its id is higher) is
-- left for a later window. So an event that commits out of order (a lower id committing after a higher one: the
-- classic outbox gap, where a cursor over a sequence skips it for good) is fanned out when its transaction ends, not
-- skipped; an aborted one never appears and holds nothing back. The windows are disjoint and the cursor moves in the
-- statement that writes the deliveries, under the cursor row's lock (one host at a time): each event is fanned out once,
-- and the (event_id, endpoint_id) key of webhook_deliveries still refuses a second delivery (e.g. from a host of the
-- previous version, which marks events as before, during a rolling upgrade).
--
-- The price: an event waits for every transaction of this database that was running when it committed to end (and
-- for those of other databases whose backends this role may not see in pg_stat_activity: then they count). Our
-- transactions last milliseconds; a long one (a migration, an idle-in-transaction session that wrote) delays webhooks by
-- its length, never loses or doubles one.
--
-- `dispatched_at` keeps its meaning for stores without an endpoint (0099/0100: written dispatched). For the others an
-- event is dispatched once `fanout_xid < done_below` (webhook_event_dispatched below); retention deletes those by
-- `created_at` (webhook_events_undispatched, kept for that: every event of such a store stays in it until then).
--
-- Lock: ADD COLUMN without a default rewrites nothing but takes ACCESS EXCLUSIVE on webhook_events (orders' writes
-- insert there and wait), taken as 0087, 0089, 0095, 0096 take theirs (review V1-1): at most 150 ms at a time, until the
-- connection's lock_timeout (else 60 s), then SQLSTATE 55P03 and nothing changed. The backfill touches only events not
-- yet fanned out (normally none or a few).
CREATE TABLE IF NOT EXISTS webhook_fanout_cursor (
  id         boolean PRIMARY KEY DEFAULT true CHECK (id),
  done_below xid8 NOT NULL
);

DO $$
DECLARE
  budget interval := COALESCE(NULLIF(current_setting('lock_timeout')::interval, interval '0'), interval '60 seconds');
  given_up timestamptz := clock_timestamp() + budget;
  restore text := current_setting('lock_timeout');
BEGIN
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '150ms', true);
      LOCK TABLE webhook_events IN ACCESS EXCLUSIVE MODE;
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
  ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS fanout_xid xid8;
  ALTER TABLE webhook_events ALTER COLUMN fanout_xid SET DEFAULT pg_current_xact_id();
  -- the events still waiting for the fan-out: in the first window (this transaction's id, above the cursor's start)
  UPDATE webhook_events SET fanout_xid = pg_current_xact_id() WHERE dispatched_at IS NULL AND fanout_xid IS NULL;
  -- The cursor starts at the oldest transaction still running (this snapshot's xmin), not at this one's id: a
  -- transaction that got its id before this one and writes its event after this commits (an order in flight during
  -- the rolling start, queued behind the lock above) has an older id, and must still fall in a window (review X-1).
  INSERT INTO webhook_fanout_cursor (id, done_below) VALUES (true, pg_snapshot_xmin(pg_current_snapshot())) ON CONFLICT (id) DO NOTHING;
  CREATE INDEX IF NOT EXISTS webhook_events_fanout ON webhook_events (fanout_xid) WHERE dispatched_at IS NULL;
END $$;

-- Whether the fan-out is done with an event: written dispatched (no endpoint, or a previous version's fan-out marked it),
-- or below the cursor.
CREATE OR REPLACE FUNCTION webhook_event_dispatched(dispatched_at timestamptz, fanout_xid xid8) RETURNS boolean
  LANGUAGE sql STABLE AS $$
  SELECT $1 IS NOT NULL OR $2 < (SELECT done_below FROM webhook_fanout_cursor)
$$;
