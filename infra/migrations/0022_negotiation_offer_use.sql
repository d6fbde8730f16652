-- An accepted negotiated price pays for one order (docs/catalog.md "negotiate", audit A1 H1). The order that uses
-- it claims it when its payment leg starts (order_id, in the leg's hold statement, before any money moves), so a
-- second order of the key cannot start with the same offer; the settle that records the capture marks it used
-- (used_at, same statement). A pending order canceled unpaid gives its claim back (order_id NULL again).
ALTER TABLE negotiation_offers ADD COLUMN order_id uuid NULL;
CREATE INDEX negotiation_offers_order ON negotiation_offers (order_id) WHERE order_id IS NOT NULL;
