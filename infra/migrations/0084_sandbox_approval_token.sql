-- The sandbox card processor's buyer-approval link carries a secret (audit I-1/I-2). The intent id is deterministic
-- (derived from the checkout session, idempotency key, store and attempt, so a retry or the reconciler finds the same
-- intent) and others can know or derive it: it was the only capability of the approval page and its approve/reject
-- posts, so another store of a multi-store cart, or the payee itself, could decide the buyer's payment. The link is
-- now /api/v1/sandbox/payments/{intent_id}/{approval_token}: 32 random bytes (hex) drawn when the intent starts
-- waiting for the buyer, stored here with the intent (insert-if-absent: a replayed or reconciled charge answers the
-- same link), compared in constant time. NULL for intents that never waited; a waiting intent recorded before this
-- migration is given one at its next charge or lookup (actors/payments/card-sandbox.ts withApprovalToken), so its old
-- tokenless link stops working and the agent's next call hands out the new one.
ALTER TABLE sandbox_ledger_intents ADD COLUMN approval_token text;
