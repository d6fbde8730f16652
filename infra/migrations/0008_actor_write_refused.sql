-- A turn's own writes may ride in its state statement (actors/runtime/state-write.ts, RidingWrite): one autocommit
-- statement instead of BEGIN, the turn's statement, the state statement and COMMIT. Such a write is sent for one
-- expected result (e.g. a leg's order inserted with nothing in the way); when the rows say otherwise, its guard
-- calls this, which aborts the whole statement, state row included, and the turn falls back to its general path.
-- SQLSTATE AF002 is ours (class AF, as AF001 of the version fence).
CREATE FUNCTION actor_write_refused(reason text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'riding write refused: %', reason USING ERRCODE = 'AF002';
END
$$;
