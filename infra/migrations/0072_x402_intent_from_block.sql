-- The chain's height when an x402 intent was recorded, read just before its first /settle (x402-rail.ts): the
-- transfer, if any, is in a later block, so the reconciliation searches the `AuthorizationUsed` log from there in
-- bounded windows instead of from block 0, which range-capped RPC providers refuse (review R4-3). NULL when the RPC
-- did not answer (or for intents recorded before this column): the search then starts a bounded window back from
-- the latest block.
ALTER TABLE x402_intents ADD COLUMN from_block bigint;
