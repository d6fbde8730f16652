-- When a webhook delivery finished: delivered, or dead-lettered (its cap, the 72 h retry horizon, a lost last
-- attempt, or its endpoint's deletion). The retention rule (infra/retention.ts) ages finished deliveries from it; until
-- now a dead one was aged from its last attempt, and the horizon and an endpoint's deletion kill a delivery without
-- a new attempt, up to ~3 days (or, for a deleted endpoint's backlog, any time) after it (review RB-4). Written by
-- actors/webhook/index.ts where a delivery becomes delivered or dead; a manual redeliver leaves it, and the next
-- outcome overwrites it (NULL while failed).
ALTER TABLE webhook_deliveries ADD COLUMN finished_at timestamptz;
-- Rows finished before this migration: the expression the rule used, the best record there is.
UPDATE webhook_deliveries SET finished_at = COALESCE(delivered_at, last_attempt_at, created_at) WHERE status IN ('delivered', 'dead');
-- The old expression stays as the fallback of a row finished without the column (a host of the previous version
-- during a rolling deploy), so no finished delivery is kept for ever. The rule's condition spells the same expression.
DROP INDEX webhook_deliveries_finished;
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries ((COALESCE(finished_at, delivered_at, last_attempt_at, created_at)))
  WHERE status IN ('delivered', 'dead');
