-- The transactional outbox: an order/checkout state change inserts its event here in the SAME transaction,
-- so an event exists if and only if the change committed. The webhook actor fans each event out to the
-- store's endpoints (deliveries live in their own table) and marks it dispatched.
CREATE TABLE webhook_events (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug    text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('order.created', 'order.status_changed', 'checkout.abandoned')),
  payload       jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  dispatched_at timestamptz NULL
);
CREATE INDEX webhook_events_undispatched ON webhook_events (created_at) WHERE dispatched_at IS NULL;
