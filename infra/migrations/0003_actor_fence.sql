-- A turn's state statement calls this when its version fence fails (another activation wrote the actor since this
-- one loaded it). Raising, instead of reporting zero rows, aborts the whole statement and any transaction it is
-- part of, so the runtime can send the state statement and COMMIT in one round trip: after a failed fence the
-- COMMIT finds the transaction aborted and rolls everything back. SQLSTATE AF001 is ours (class AF is unused).
CREATE FUNCTION actor_fence_failed(kind text, id text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'actor %/% was written by another activation (stale version)', kind, id USING ERRCODE = 'AF001';
END
$$;
