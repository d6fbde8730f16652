-- A turn that commits a mid-turn checkpoint (ctx.checkpoint() before an outside call) over a transport that can lose
-- a reply (NATS) leaves a "pending" marker for its message in actor_inbox, in the same statement as the checkpoint:
-- reply NULL, pending_until the time until which that first run may still answer (its caller's deadline plus the
-- inbox's skew margin), pending_turn the run's own token. A resend of the message that finds a live marker answers
-- the retryable actor_unavailable instead of running the handler on the half-finished turn's state, and no other
-- activation loads the actor while it is live (its onActivate would treat the live turn as dead). The run's final
-- reply replaces its marker; a run that fails deletes it; an expired one is replaced by the next run of the message
-- (the first run is presumed dead, and handlers resume from their checkpoints). docs/decisions.md.
ALTER TABLE actor_inbox ALTER COLUMN reply DROP NOT NULL;
ALTER TABLE actor_inbox ADD COLUMN pending_until timestamptz;
ALTER TABLE actor_inbox ADD COLUMN pending_turn text;
-- a row is either a reply or a marker (NOT VALID: every existing row is a reply; new rows are checked)
ALTER TABLE actor_inbox ADD CONSTRAINT actor_inbox_reply_or_pending
  CHECK ((reply IS NULL) = (pending_until IS NOT NULL AND pending_turn IS NOT NULL)) NOT VALID;
-- the activation's load looks for a live marker of its actor (any message): markers only, so this index stays tiny
CREATE INDEX actor_inbox_pending ON actor_inbox (kind, id) WHERE pending_until IS NOT NULL;

-- A turn's inbox row (its reply, or its pending marker) found another run's row in its place: a final reply (the
-- message was answered already) or another run's marker that has not expired (that run may still answer). Raising
-- aborts the whole statement, state row included, as AF001 does. SQLSTATE AF003 is ours (class AF).
CREATE FUNCTION actor_already_answered(kind text, id text, msg_id text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'actor %/%: message % is answered or running elsewhere', kind, id, msg_id USING ERRCODE = 'AF003';
END
$$;
