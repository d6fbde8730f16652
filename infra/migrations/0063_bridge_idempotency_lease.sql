-- A lease on a bridge Idempotency-Key claim (gateway/bridge/common.ts withIdempotency). A claim is the row with
-- `status NULL`, written before the request's work and filled in after it. A request that dies in between (a crash,
-- a lost connection at the final UPDATE) used to leave the key answering "still running" for good; now the claim
-- holds only until `claimed_until`, after which the next request with the same key and body takes it over and runs
-- the work again (safe: the cart's own session idempotency answers for a payment already made).
-- `claim_id` names the request holding the claim, so a request whose lease was taken over cannot overwrite or delete
-- its successor's record.
-- Existing rows get the migration's time: a claim left unfinished before this migration is taken over at once.
ALTER TABLE bridge_idempotency
  ADD COLUMN claimed_until timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN claim_id      uuid;
