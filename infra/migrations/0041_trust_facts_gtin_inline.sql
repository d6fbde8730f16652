-- trust_current keeps the store's database facts (inputs.ts StoreFacts, ~0.5 kB) instead of the engines' full
-- inputs (~1.5 kB): the inputs are a pure function of the facts and the computation time, and the smaller row
-- halves the write volume of a 10,000-store recompute.
ALTER TABLE trust_current RENAME COLUMN inputs TO facts;

-- Same rule as 0040's gtin_check_digit_ok, as one arithmetic expression over the GTIN left-padded to 14 digits
-- (leading zeros do not change a GS1 check digit): the planner inlines it, where 0040's per-row generate_series
-- subquery cost ~20 µs a product in the trust recompute.
CREATE OR REPLACE FUNCTION gtin_check_digit_ok(g text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT g IS NOT NULL AND g ~ '^([0-9]{8}|[0-9]{12,14})$' AND (
    (10 - (
       3 * substr(lpad(g, 14, '0'), 1, 1)::int + substr(lpad(g, 14, '0'), 2, 1)::int
     + 3 * substr(lpad(g, 14, '0'), 3, 1)::int + substr(lpad(g, 14, '0'), 4, 1)::int
     + 3 * substr(lpad(g, 14, '0'), 5, 1)::int + substr(lpad(g, 14, '0'), 6, 1)::int
     + 3 * substr(lpad(g, 14, '0'), 7, 1)::int + substr(lpad(g, 14, '0'), 8, 1)::int
     + 3 * substr(lpad(g, 14, '0'), 9, 1)::int + substr(lpad(g, 14, '0'), 10, 1)::int
     + 3 * substr(lpad(g, 14, '0'), 11, 1)::int + substr(lpad(g, 14, '0'), 12, 1)::int
     + 3 * substr(lpad(g, 14, '0'), 13, 1)::int
    ) % 10) % 10 = substr(lpad(g, 14, '0'), 14, 1)::int
  )
$$;
