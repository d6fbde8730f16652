-- Variant-level stock holds. A variant's stock lives in products.variants[].stockQuantity (null = untracked);
-- the units held for running payments live beside it on the same row, so one conditional UPDATE of the product
-- row (row lock, re-checked by Postgres on the latest row version) holds the product's and its variants' stock
-- together: never oversold, all-or-nothing per leg, exactly like products.reserved_quantity (0031).
--
-- variant_reserved: {"<variant id>": units held}, zero entries dropped.
ALTER TABLE products ADD COLUMN variant_reserved jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Every value a positive integer: a hold never goes negative (releases clamp and drop zeros).
CREATE FUNCTION stock_counts_valid(c jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT jsonb_typeof(c) = 'object' AND NOT EXISTS (
    SELECT 1 FROM jsonb_each(c) e WHERE jsonb_typeof(e.value) <> 'number' OR (e.value)::numeric < 1 OR (e.value)::numeric <> trunc((e.value)::numeric))
$$;
ALTER TABLE products ADD CONSTRAINT products_variant_reserved_valid CHECK (stock_counts_valid(variant_reserved));

-- a + sign * b per key, clamped at 0, zero entries dropped.
CREATE FUNCTION stock_counts_add(a jsonb, b jsonb, sign integer) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_object_agg(k, n), '{}'::jsonb) FROM (
    SELECT k, GREATEST(0, COALESCE((a->>k)::int, 0) + sign * COALESCE((b->>k)::int, 0)) AS n
    FROM (SELECT jsonb_object_keys(COALESCE(a, '{}'::jsonb)) AS k UNION SELECT jsonb_object_keys(COALESCE(b, '{}'::jsonb))) ks
  ) t WHERE n > 0
$$;

-- The sum of several count maps (a reservation's lines for one product, grouped).
CREATE FUNCTION stock_counts_sum(cs jsonb[]) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_object_agg(k, n), '{}'::jsonb) FROM (
    SELECT e.key AS k, sum((e.value)::int)::int AS n FROM unnest(cs) c, jsonb_each_text(COALESCE(c, '{}'::jsonb)) e GROUP BY e.key
  ) t WHERE n > 0
$$;

-- The part of a wanted {variant id: units} whose variant tracks stock (untracked variants are unlimited, never held).
CREATE FUNCTION variant_holds_tracked(variants jsonb, want jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_object_agg(w.key, w.value), '{}'::jsonb)
  FROM jsonb_each(COALESCE(want, '{}'::jsonb)) w
  WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(variants) v WHERE v->>'id' = w.key AND jsonb_typeof(v->'stockQuantity') = 'number')
$$;

-- Every wanted variant exists, is in stock, and (when tracked) its stock minus what is held covers the units.
CREATE FUNCTION variant_stock_covers(variants jsonb, reserved jsonb, want jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT NOT EXISTS (
    SELECT 1 FROM jsonb_each_text(COALESCE(want, '{}'::jsonb)) w
    LEFT JOIN LATERAL (SELECT v FROM jsonb_array_elements(variants) v WHERE v->>'id' = w.key LIMIT 1) x ON true
    WHERE x.v IS NULL
      OR x.v->'inStock' = 'false'::jsonb
      OR (jsonb_typeof(x.v->'stockQuantity') = 'number'
          AND (x.v->>'stockQuantity')::int - COALESCE((reserved->>w.key)::int, 0) < (w.value)::int))
$$;

-- A sale: each tracked variant loses the units sold (clamped at 0; a merchant sync may have lowered it below the
-- hold) and is out of stock at 0. Order of the array is kept.
CREATE FUNCTION variant_stock_sell(variants jsonb, sold jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_agg(
    CASE WHEN (sold->>(e.v->>'id')) IS NOT NULL AND jsonb_typeof(e.v->'stockQuantity') = 'number'
      THEN e.v || jsonb_build_object(
        'stockQuantity', GREATEST(0, (e.v->>'stockQuantity')::int - (sold->>(e.v->>'id'))::int),
        'inStock', (e.v->>'stockQuantity')::int - (sold->>(e.v->>'id'))::int > 0)
      ELSE e.v END ORDER BY e.ord), '[]'::jsonb)
  FROM jsonb_array_elements(variants) WITH ORDINALITY AS e(v, ord)
$$;
