-- Merchant ingestion and negotiation (P4). Owned by the store actor (writes) and the read model (reads).

-- Human orders pushed through POST /merchant/stores/{slug}/orders are idempotent per merchant order id.
CREATE TABLE merchant_order_refs (
  store_slug  text        NOT NULL REFERENCES stores (slug) ON DELETE CASCADE ON UPDATE CASCADE,
  external_id text        NOT NULL,
  order_id    uuid        NOT NULL, -- no FK: orders are created in 0030 (a later migration); the store actor writes both in one turn
  created_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT merchant_order_refs_pk PRIMARY KEY (store_slug, external_id),
  CONSTRAINT merchant_order_refs_external_id_len CHECK (length(external_id) BETWEEN 1 AND 255)
);

-- POST /agent/negotiate (BETA): one row per bid. An accepted offer carries the negotiated price a cart may use
-- until expires_at (the cart reads it by id, agent key and product).
CREATE TABLE negotiation_offers (
  id                     uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug             text        NOT NULL REFERENCES stores (slug) ON DELETE CASCADE ON UPDATE CASCADE,
  product_id             uuid        NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  agent_key_id           uuid        NOT NULL,
  round                  integer     NOT NULL,
  status                 text        NOT NULL,
  bid_minor              bigint      NOT NULL,
  list_price_minor       bigint      NOT NULL,
  counter_minor          bigint,
  negotiated_price_minor bigint,
  currency               char(3)     NOT NULL,
  expires_at             timestamptz,
  used_at                timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT negotiation_offers_status_check CHECK (status IN ('accepted', 'countered', 'rejected')),
  CONSTRAINT negotiation_offers_round_positive CHECK (round >= 1),
  CONSTRAINT negotiation_offers_money_nonneg CHECK (bid_minor >= 0 AND list_price_minor >= 0),
  CONSTRAINT negotiation_offers_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
  CONSTRAINT negotiation_offers_accepted_has_price CHECK (status <> 'accepted' OR (negotiated_price_minor IS NOT NULL AND expires_at IS NOT NULL))
);
CREATE INDEX negotiation_offers_key_product ON negotiation_offers (agent_key_id, product_id, created_at DESC);

-- The operator's search settings (GET/PUT /admin/search/settings): one row, a JSON patch over the defaults of
-- search/settings.ts, versioned so every gateway notices a change on its next catch-up.
CREATE TABLE search_settings (
  id         integer     PRIMARY KEY DEFAULT 1,
  patch      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  version    integer     NOT NULL DEFAULT 1,
  updated_at timestamptz NOT NULL DEFAULT now(),
  updated_by uuid,
  CONSTRAINT search_settings_single_row CHECK (id = 1),
  CONSTRAINT search_settings_patch_object CHECK (jsonb_typeof(patch) = 'object')
);
