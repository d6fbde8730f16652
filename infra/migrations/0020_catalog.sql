-- Merchants and their catalogs. Money is always integer minor units (cents) plus an ISO 4217 currency; the API
-- converts to decimals at the edge. Constraints are named so a later migration can replace one without guessing.

CREATE TABLE stores (
  slug               text        PRIMARY KEY,
  name               text        NOT NULL,
  owner_user_id      uuid        REFERENCES users (id) ON DELETE SET NULL,
  verification_level text        NOT NULL DEFAULT 'UNVERIFIED',
  country            char(2)     NOT NULL,
  eu_based           boolean     NOT NULL DEFAULT false,
  -- The store's own currency: policies.freeShippingThresholdMinor and negotiation floors are in it.
  currency           char(3)     NOT NULL DEFAULT 'USD',
  platform           text        NOT NULL DEFAULT 'custom',
  hosted_storefront  boolean     NOT NULL DEFAULT false,
  -- The currently published score (0..1), written by the trust actor; null until first computed.
  trust_score        numeric(5, 4),
  operational_status text        NOT NULL DEFAULT 'active',
  last_sync_at       timestamptz,
  -- Policies (see actors/store/schemas.ts `Policies`): acceptsReturns, returnWindowDays,
  -- freeShippingThresholdMinor, restockingFeePercent, shippingEstimateDays, supportResponseTimeSla.
  policies           jsonb       NOT NULL DEFAULT '{"acceptsReturns": false}'::jsonb,
  policy_version     integer     NOT NULL DEFAULT 1,
  payment_methods    text[]      NOT NULL DEFAULT '{card}',
  -- null = every MCP tool is enabled for this store.
  enabled_mcp_tools  text[],
  negotiation_rules  jsonb,
  review_rating_avg  numeric(3, 2),
  review_count       integer     NOT NULL DEFAULT 0,
  -- Optimistic fence for the store actor's writes (UPDATE ... WHERE version = $n).
  version            integer     NOT NULL DEFAULT 0,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT stores_slug_format CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  CONSTRAINT stores_verification_level_check
    CHECK (verification_level IN ('UNVERIFIED', 'BASIC', 'STANDARD', 'PREMIUM', 'QUALIFIED')),
  CONSTRAINT stores_country_format CHECK (country ~ '^[A-Z]{2}$'),
  CONSTRAINT stores_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
  CONSTRAINT stores_trust_score_range CHECK (trust_score IS NULL OR (trust_score >= 0 AND trust_score <= 1)),
  CONSTRAINT stores_operational_status_check
    CHECK (operational_status IN ('active', 'deprioritized', 'hidden', 'suspended')),
  CONSTRAINT stores_policies_object CHECK (jsonb_typeof(policies) = 'object'),
  CONSTRAINT stores_policy_version_positive CHECK (policy_version >= 1),
  CONSTRAINT stores_review_rating_range CHECK (review_rating_avg IS NULL OR (review_rating_avg >= 0 AND review_rating_avg <= 5)),
  CONSTRAINT stores_review_count_nonneg CHECK (review_count >= 0)
);
CREATE INDEX stores_owner ON stores (owner_user_id);
-- Eligibility filter (level, status, score) runs on every search and merchant read.
CREATE INDEX stores_visibility ON stores (operational_status, verification_level, trust_score);

CREATE TABLE products (
  id                     uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug             text        NOT NULL REFERENCES stores (slug) ON DELETE CASCADE ON UPDATE CASCADE,
  external_id            text        NOT NULL,
  title                  text        NOT NULL,
  description            text        NOT NULL DEFAULT '',
  brand                  text,
  category               text,
  tags                   text[]      NOT NULL DEFAULT '{}',
  -- Digits only; the check digit is deliberately not enforced here so bad merchant data stays visible to the
  -- trust engine's data-consistency signal instead of being rejected silently.
  gtin                   text,
  price_minor            bigint      NOT NULL,
  compare_at_price_minor bigint,
  currency               char(3)     NOT NULL,
  -- null = the merchant does not track stock; in_stock is then the merchant's word.
  stock_quantity         integer,
  in_stock               boolean     NOT NULL DEFAULT true,
  images                 text[]      NOT NULL DEFAULT '{}',
  variants               jsonb       NOT NULL DEFAULT '[]'::jsonb,
  attributes             jsonb       NOT NULL DEFAULT '{}'::jsonb,
  active                 boolean     NOT NULL DEFAULT true,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  synced_at              timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT products_store_external_unique UNIQUE (store_slug, external_id),
  CONSTRAINT products_external_id_nonempty CHECK (length(external_id) BETWEEN 1 AND 255),
  CONSTRAINT products_title_nonempty CHECK (length(title) BETWEEN 1 AND 500),
  CONSTRAINT products_gtin_format CHECK (gtin IS NULL OR gtin ~ '^[0-9]{8,14}$'),
  CONSTRAINT products_price_nonneg CHECK (price_minor >= 0),
  CONSTRAINT products_compare_at_nonneg CHECK (compare_at_price_minor IS NULL OR compare_at_price_minor >= 0),
  CONSTRAINT products_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
  CONSTRAINT products_stock_nonneg CHECK (stock_quantity IS NULL OR stock_quantity >= 0),
  CONSTRAINT products_variants_array CHECK (jsonb_typeof(variants) = 'array'),
  CONSTRAINT products_attributes_object CHECK (jsonb_typeof(attributes) = 'object')
);
CREATE INDEX products_store_active ON products (store_slug, active, category);
CREATE INDEX products_category ON products (category) WHERE active;
-- The search indexer and freshness checks walk recent changes.
CREATE INDEX products_updated_at ON products (updated_at);
-- Data-consistency (GTIN uniqueness) and cross-merchant matching.
CREATE INDEX products_gtin ON products (gtin) WHERE gtin IS NOT NULL;

-- Price observations for GET /agent/products/{id}/price-history (a row per change, plus the first sighting).
CREATE TABLE product_price_history (
  id          bigserial   PRIMARY KEY,
  product_id  uuid        NOT NULL REFERENCES products (id) ON DELETE CASCADE,
  price_minor bigint      NOT NULL,
  currency    char(3)     NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT price_history_price_nonneg CHECK (price_minor >= 0),
  CONSTRAINT price_history_currency_format CHECK (currency ~ '^[A-Z]{3}$')
);
CREATE INDEX product_price_history_product_time ON product_price_history (product_id, recorded_at DESC);

-- A zone matches a destination when the country is listed and, if postal_prefixes is non-empty, the postal code
-- starts with one of them. The most specific matching zone (with prefixes) wins over a country-wide one.
CREATE TABLE shipping_zones (
  id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug      text        NOT NULL REFERENCES stores (slug) ON DELETE CASCADE ON UPDATE CASCADE,
  name            text        NOT NULL,
  countries       text[]      NOT NULL,
  postal_prefixes text[]      NOT NULL DEFAULT '{}',
  currency        char(3)     NOT NULL,
  base_minor      bigint      NOT NULL,
  per_item_minor  bigint      NOT NULL DEFAULT 0,
  -- Order subtotal at or above which shipping in this zone is free; null = never free.
  free_over_minor bigint,
  min_days        integer     NOT NULL,
  max_days        integer     NOT NULL,
  CONSTRAINT shipping_zones_store_name_unique UNIQUE (store_slug, name),
  CONSTRAINT shipping_zones_countries_nonempty CHECK (cardinality(countries) >= 1),
  CONSTRAINT shipping_zones_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
  CONSTRAINT shipping_zones_money_nonneg
    CHECK (base_minor >= 0 AND per_item_minor >= 0 AND (free_over_minor IS NULL OR free_over_minor >= 0)),
  CONSTRAINT shipping_zones_days_order CHECK (min_days >= 0 AND max_days >= min_days)
);
CREATE INDEX shipping_zones_store ON shipping_zones (store_slug);
CREATE INDEX shipping_zones_countries ON shipping_zones USING gin (countries);

-- percent: value is a whole percentage 1..100. fixed: value is minor units of `currency`.
CREATE TABLE coupons (
  id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug      text        NOT NULL REFERENCES stores (slug) ON DELETE CASCADE ON UPDATE CASCADE,
  code            text        NOT NULL,
  kind            text        NOT NULL,
  value           bigint      NOT NULL,
  min_spend_minor bigint      NOT NULL DEFAULT 0,
  currency        char(3),
  expires_at      timestamptz,
  -- null = unlimited.
  usage_limit     integer,
  used_count      integer     NOT NULL DEFAULT 0,
  active          boolean     NOT NULL DEFAULT true,
  created_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT coupons_kind_check CHECK (kind IN ('percent', 'fixed')),
  CONSTRAINT coupons_value_range CHECK (value > 0 AND (kind <> 'percent' OR value <= 100)),
  CONSTRAINT coupons_fixed_needs_currency CHECK (kind <> 'fixed' OR currency IS NOT NULL),
  CONSTRAINT coupons_currency_format CHECK (currency IS NULL OR currency ~ '^[A-Z]{3}$'),
  CONSTRAINT coupons_min_spend_nonneg CHECK (min_spend_minor >= 0),
  CONSTRAINT coupons_usage_nonneg CHECK (used_count >= 0 AND (usage_limit IS NULL OR usage_limit >= 0)),
  CONSTRAINT coupons_code_format CHECK (code ~ '^[A-Z0-9_-]{2,64}$')
);
-- Codes are stored upper-case; lookups upper-case the caller's input.
CREATE UNIQUE INDEX coupons_store_code ON coupons (store_slug, code);
