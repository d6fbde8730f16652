-- A refund's or a paid cancel's restock (actors/store/refund-flow.ts returnSoldStock) saturates at the stock column's
-- maximum (2^31 - 1, MAX_STOCK_QUANTITY) instead of failing the refund's turn with 22003: a merchant may have set the
-- stock near that maximum after the sale (docs/review.md session 17, "Refund restock"). Same as 0035's function
-- otherwise: each tracked variant gets the units back; one the sale left at 0 is in stock again; untracked variants
-- are left alone; the array's order is kept.
CREATE OR REPLACE FUNCTION variant_stock_return(variants jsonb, returned jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_agg(
    CASE WHEN (returned->>(e.v->>'id')) IS NOT NULL AND jsonb_typeof(e.v->'stockQuantity') = 'number'
      THEN e.v || jsonb_build_object('stockQuantity', LEAST((e.v->>'stockQuantity')::bigint + (returned->>(e.v->>'id'))::bigint, 2147483647))
        || CASE WHEN (e.v->>'stockQuantity')::bigint <= 0 THEN jsonb_build_object('inStock', true) ELSE '{}'::jsonb END
      ELSE e.v END ORDER BY e.ord), '[]'::jsonb)
  FROM jsonb_array_elements(variants) WITH ORDINALITY AS e(v, ord)
$$;
