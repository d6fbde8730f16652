-- Endpoints that stay down are disabled (actors/webhook/index.ts, docs/webhooks.md "Disabled endpoints"). Until now an
-- endpoint that never answered again was probed once an hour for ever and got a delivery row for every new event
-- (72 h pending, then 30 days dead).
--
-- failing_since: when the current failure streak began (the first failed attempt after the last 2xx, the endpoint's
-- creation or its re-enabling); NULL while the last recorded outcome was a 2xx. A failed attempt recorded 5 days or
-- more after it disables the endpoint. Written by the endpoint's actor in the statement that stores its breaker.
-- disabled_at / disabled_reason: set together when the service (or the merchant) disables the endpoint; the outbox
-- fan-out skips it then, and re-enabling clears both and the streak.
--
-- Endpoints already failing when this runs start their streak at their next failed attempt. Nullable columns without
-- a default: no table rewrite; the CHECK scans webhook_endpoints once (at most 20 live rows per store).
ALTER TABLE webhook_endpoints
  ADD COLUMN failing_since timestamptz,
  ADD COLUMN disabled_at timestamptz,
  ADD COLUMN disabled_reason text,
  ADD CONSTRAINT webhook_endpoints_disabled_pair CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL));
