-- Merchant enforcement rules read at checkout (docs/checkout.md "Enforcement"): null = no rules.
-- {"max_order_minor": n} blocks a store's order above n minor units (CHECKOUT_BLOCKED_BY_POLICY);
-- {"unavailable": true} (or anything that is not an object) refuses fail-closed (ENFORCEMENT_UNAVAILABLE).
ALTER TABLE stores ADD COLUMN checkout_enforcement jsonb;
-- The merchant's own hosted checkout, named in NATIVE_CHECKOUT_REQUIRED (details.checkout_url).
ALTER TABLE stores ADD COLUMN hosted_checkout_url text;
-- Set when money was captured but the order could not be completed (amount_mismatch, finalization_failed):
-- a human reconciles (refund or complete by hand). Null = nothing to reconcile.
ALTER TABLE orders ADD COLUMN reconciliation text;
CREATE INDEX orders_reconciliation ON orders (store_slug, created_at) WHERE reconciliation IS NOT NULL;
