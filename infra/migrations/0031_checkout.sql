-- Carts, checkout, orders and refunds (P5). Cart and checkout-session state lives in the cart actor's state row;
-- what the store side owns lives here as rows, written only inside a `store/<slug>` actor turn.

-- Stock held by running payments. available = stock_quantity - reserved_quantity (stock_quantity null =
-- untracked). A merchant sync rewrites stock_quantity and leaves the holds alone, as actors/store/inventory.ts
-- models it; the CHECK makes overselling impossible even if two hosts briefly both own a store.
ALTER TABLE products ADD COLUMN reserved_quantity integer NOT NULL DEFAULT 0;
ALTER TABLE products ADD CONSTRAINT products_reserved_nonneg CHECK (reserved_quantity >= 0);

CREATE TABLE stock_reservations (
  id          text        PRIMARY KEY,
  store_slug  text        NOT NULL,
  order_id    uuid        NOT NULL,
  -- [{productId, variantId, quantity}], quantities summed per product
  lines       jsonb       NOT NULL,
  status      text        NOT NULL DEFAULT 'held',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT stock_reservations_status_check CHECK (status IN ('held', 'committed', 'released'))
);
CREATE INDEX stock_reservations_order ON stock_reservations (order_id);
CREATE INDEX stock_reservations_held ON stock_reservations (store_slug, created_at) WHERE status = 'held';

-- Orders written by checkout: one per (checkout session, store), whatever the number of payment attempts.
ALTER TABLE orders ADD COLUMN checkout_session_id text;
ALTER TABLE orders ADD COLUMN cart_id uuid;
ALTER TABLE orders ADD COLUMN subtotal_minor bigint;
ALTER TABLE orders ADD COLUMN discount_minor bigint NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN shipping_minor bigint NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN tax_minor bigint NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN coupon_code text;
ALTER TABLE orders ADD COLUMN payment_method text;
ALTER TABLE orders ADD COLUMN intent_id text;
ALTER TABLE orders ADD COLUMN capture_ref text;
ALTER TABLE orders ADD COLUMN simulated boolean NOT NULL DEFAULT false;
ALTER TABLE orders ADD COLUMN paid_at timestamptz;
ALTER TABLE orders ADD COLUMN delivered_at timestamptz;
CREATE UNIQUE INDEX orders_checkout_session_store ON orders (checkout_session_id, store_slug) WHERE checkout_session_id IS NOT NULL;
-- The order machine (actors/store/order-machine.ts) has partially_refunded; the base constraint predates it.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
  CHECK (status IN ('pending', 'paid', 'fulfilled', 'shipped', 'delivered', 'canceled', 'partially_refunded', 'refunded'));

-- Refund requests: an agent proposes, a human merchant decides, the rail refunds.
CREATE TABLE order_refunds (
  id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  order_id      uuid        NOT NULL REFERENCES orders (id),
  store_slug    text        NOT NULL,
  agent_key_id  uuid,
  amount_minor  bigint      NOT NULL,
  currency      char(3)     NOT NULL,
  reason        text,
  status        text        NOT NULL DEFAULT 'PENDING_APPROVAL',
  refund_ref    text,
  failure       text,
  decided_by    uuid,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT order_refunds_amount_positive CHECK (amount_minor > 0),
  CONSTRAINT order_refunds_status_check CHECK (status IN ('PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'REFUNDED', 'FAILED')),
  CONSTRAINT order_refunds_reason_len CHECK (reason IS NULL OR char_length(reason) <= 255)
);
CREATE INDEX order_refunds_order ON order_refunds (order_id);
CREATE INDEX order_refunds_store_status ON order_refunds (store_slug, status, created_at);

-- Which agent keys may ask a store for refunds. Created `allowed` at a key's first order with the store;
-- the merchant blocks or unblocks. A missing or blocked binding answers 404 (no oracle for other tenants).
CREATE TABLE store_agent_allowlist (
  store_slug   text        NOT NULL REFERENCES stores (slug) ON DELETE CASCADE ON UPDATE CASCADE,
  agent_key_id uuid        NOT NULL,
  status       text        NOT NULL DEFAULT 'allowed',
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT store_agent_allowlist_pk PRIMARY KEY (store_slug, agent_key_id),
  CONSTRAINT store_agent_allowlist_status_check CHECK (status IN ('allowed', 'blocked'))
);

-- The sandbox card processor's ledger (actors/payments/sandbox-ledger-pg.ts). It plays an external processor:
-- it must survive our own crash, so a capture made just before a crash is found again by intent id.
CREATE TABLE sandbox_ledger_intents (
  intent_id      text        PRIMARY KEY,
  store_id       text        NOT NULL,
  amount_minor   bigint      NOT NULL,
  currency       char(3)     NOT NULL,
  token          text        NOT NULL,
  state          text        NOT NULL,
  capture_ref    text,
  refunded_minor bigint      NOT NULL DEFAULT 0,
  simulated      boolean     NOT NULL DEFAULT false,
  response_lost  boolean     NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL
);
CREATE INDEX sandbox_ledger_intents_capture ON sandbox_ledger_intents (capture_ref) WHERE capture_ref IS NOT NULL;

CREATE TABLE sandbox_ledger_refunds (
  refund_id   text        PRIMARY KEY,
  capture_ref text        NOT NULL,
  result      jsonb       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
