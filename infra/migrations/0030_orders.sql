-- Base order tables. Checkout, refunds and the trust engines extend these in later 003x migrations.
-- Orders are never deleted (trust history is computed from them), so foreign keys do not cascade.

CREATE TABLE orders (
  id                uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug        text        NOT NULL REFERENCES stores (slug) ON UPDATE CASCADE,
  channel           text        NOT NULL,
  -- The agent key that owns the order (reads are scoped to it). No FK: keys live in another area's table and
  -- imported history may name keys that no longer exist.
  agent_key_id      uuid,
  -- Hashed buyer identity (never the raw e-mail), for unique-buyer counts.
  buyer_ref         text        NOT NULL,
  status            text        NOT NULL DEFAULT 'pending',
  total_minor       bigint      NOT NULL,
  currency          char(3)     NOT NULL,
  payment_rail      text        NOT NULL,
  -- null until fulfilled (or when the order never will be).
  fulfilled_on_time boolean,
  disputed          boolean     NOT NULL DEFAULT false,
  refunded_minor    bigint      NOT NULL DEFAULT 0,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  -- Optimistic fence (UPDATE ... WHERE version = $n).
  version           integer     NOT NULL DEFAULT 0,
  CONSTRAINT orders_channel_check CHECK (channel IN ('agent', 'human')),
  CONSTRAINT orders_agent_key_only_for_agents CHECK (channel = 'agent' OR agent_key_id IS NULL),
  CONSTRAINT orders_status_check
    CHECK (status IN ('pending', 'paid', 'fulfilled', 'shipped', 'delivered', 'canceled', 'refunded')),
  CONSTRAINT orders_total_nonneg CHECK (total_minor >= 0),
  CONSTRAINT orders_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
  CONSTRAINT orders_refunded_range CHECK (refunded_minor >= 0 AND refunded_minor <= total_minor),
  CONSTRAINT orders_version_nonneg CHECK (version >= 0)
);
CREATE INDEX orders_store_created ON orders (store_slug, created_at DESC);
CREATE INDEX orders_agent_key ON orders (agent_key_id, created_at DESC) WHERE agent_key_id IS NOT NULL;

CREATE TABLE order_items (
  id               bigserial PRIMARY KEY,
  order_id         uuid      NOT NULL REFERENCES orders (id),
  -- Kept when the product later leaves the catalog; title and price are the snapshot at purchase time.
  product_id       uuid      REFERENCES products (id) ON DELETE SET NULL,
  variant_id       uuid,
  title            text      NOT NULL,
  quantity         integer   NOT NULL,
  unit_price_minor bigint    NOT NULL,
  CONSTRAINT order_items_quantity_positive CHECK (quantity >= 1),
  CONSTRAINT order_items_price_nonneg CHECK (unit_price_minor >= 0)
);
CREATE INDEX order_items_order ON order_items (order_id);
CREATE INDEX order_items_product ON order_items (product_id);

-- Append-only history of an order: the trigger below refuses UPDATE and DELETE.
CREATE TABLE order_events (
  id          bigserial   PRIMARY KEY,
  order_id    uuid        NOT NULL REFERENCES orders (id),
  at          timestamptz NOT NULL DEFAULT now(),
  type        text        NOT NULL,
  from_status text,
  to_status   text,
  data        jsonb       NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX order_events_order ON order_events (order_id, id);

CREATE FUNCTION order_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'order_events is append-only (% refused)', TG_OP;
END;
$$;
CREATE TRIGGER order_events_no_rewrite BEFORE UPDATE OR DELETE ON order_events
  FOR EACH ROW EXECUTE FUNCTION order_events_append_only();
