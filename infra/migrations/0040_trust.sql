-- Trust scores (actors/trust): the append-only score history, the latest published score of each store with
-- what it was computed from and its signatures, anomaly alerts and merchant appeals. The signing keys live in
-- signing_keys (purpose 'trust', 0012).

-- One row per computed score. Append-only: the trigger below refuses UPDATE and DELETE, so a published score can
-- never be rewritten after the fact (the spec: "Score history is append-only").
CREATE TABLE trust_score_history (
  id                bigserial    PRIMARY KEY,
  store_slug        text         NOT NULL REFERENCES stores (slug),
  computed_at       timestamptz  NOT NULL,
  -- The score published with the flags in force at compute time (0..1 and 0..100, same engine).
  score_0to1        numeric(5, 4) NOT NULL,
  score_0to100      numeric(5, 2) NOT NULL,
  engine            text         NOT NULL,
  -- Both engines' numbers, so a later flag change can be audited against what each engine said.
  v41_score_0to100  numeric(5, 2),
  v41_tier          text         NOT NULL,
  v2_score_0to1     numeric(5, 4) NOT NULL,
  operational_status text        NOT NULL,
  -- Count of measured/verified signals (the anomaly rule's "evidence grew" test).
  verified_evidence integer      NOT NULL DEFAULT 0,
  -- 'refresh' (reminder), 'operator' (admin endpoint), 'on_demand' (first read of a never-scored store).
  trigger           text         NOT NULL,
  CONSTRAINT trust_history_engine_check CHECK (engine IN ('v41', 'v2')),
  CONSTRAINT trust_history_score_range CHECK (score_0to1 >= 0 AND score_0to1 <= 1 AND score_0to100 >= 0 AND score_0to100 <= 100),
  CONSTRAINT trust_history_status_check CHECK (operational_status IN ('active', 'deprioritized', 'hidden', 'suspended'))
);
CREATE INDEX trust_score_history_store_time ON trust_score_history (store_slug, computed_at DESC);

CREATE FUNCTION trust_score_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'trust_score_history is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER trust_score_history_no_rewrite BEFORE UPDATE OR DELETE ON trust_score_history
  FOR EACH ROW EXECUTE FUNCTION trust_score_history_append_only();
-- TRUNCATE bypasses row triggers; refuse it too.
CREATE TRIGGER trust_score_history_no_truncate BEFORE TRUNCATE ON trust_score_history
  FOR EACH STATEMENT EXECUTE FUNCTION trust_score_history_append_only();

-- The latest score of each store: the engines' inputs (the results are recomputed from them with the pure
-- engines at read time, so per-request engine selection needs no second computation path) and one signature per
-- engine that produced a number. Replaced at each recompute.
CREATE TABLE trust_current (
  store_slug   text        PRIMARY KEY REFERENCES stores (slug) ON UPDATE CASCADE ON DELETE CASCADE,
  history_id   bigint      NOT NULL,
  computed_at  timestamptz NOT NULL,
  inputs       jsonb       NOT NULL,
  jws_v41      text,
  jws_v2       text        NOT NULL,
  signed_at    timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL
);

CREATE TABLE trust_anomaly_alerts (
  id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug    text        NOT NULL REFERENCES stores (slug) ON UPDATE CASCADE,
  kind          text        NOT NULL,
  history_id    bigint      NOT NULL,
  detected_at   timestamptz NOT NULL,
  engine        text        NOT NULL,
  from_0to1     numeric(5, 4) NOT NULL,
  to_0to1       numeric(5, 4) NOT NULL,
  delta_0to1    numeric(5, 4) NOT NULL,
  from_band     text        NOT NULL,
  to_band       text        NOT NULL,
  window_hours  integer     NOT NULL,
  status        text        NOT NULL DEFAULT 'open',
  resolution    text,
  note          text,
  resolved_by   uuid,
  resolved_at   timestamptz,
  CONSTRAINT trust_alerts_kind_check CHECK (kind IN ('rapid_gain', 'band_jump_without_evidence')),
  CONSTRAINT trust_alerts_status_check CHECK (status IN ('open', 'resolved')),
  CONSTRAINT trust_alerts_resolution_check CHECK (resolution IS NULL OR resolution IN ('confirmed_legitimate', 'confirmed_manipulation', 'dismissed')),
  CONSTRAINT trust_alerts_resolved_consistent CHECK ((status = 'open') = (resolved_at IS NULL))
);
CREATE INDEX trust_anomaly_alerts_status ON trust_anomaly_alerts (status, detected_at DESC);

CREATE TABLE trust_appeals (
  id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  store_slug    text        NOT NULL REFERENCES stores (slug) ON UPDATE CASCADE,
  filed_by      uuid        NOT NULL,
  -- The score being disputed, as published when the appeal was filed.
  history_id    bigint,
  disputed_score_0to1 numeric(5, 4),
  reason        text        NOT NULL,
  evidence_urls text[]      NOT NULL DEFAULT '{}',
  status        text        NOT NULL DEFAULT 'open',
  filed_at      timestamptz NOT NULL,
  review_due_at timestamptz NOT NULL,
  decision      text,
  decision_note text,
  resolved_by   uuid,
  resolved_at   timestamptz,
  CONSTRAINT trust_appeals_reason_length CHECK (length(reason) BETWEEN 10 AND 2000),
  CONSTRAINT trust_appeals_status_check CHECK (status IN ('open', 'resolved')),
  CONSTRAINT trust_appeals_decision_check CHECK (decision IS NULL OR decision IN ('upheld', 'rejected')),
  CONSTRAINT trust_appeals_resolved_consistent CHECK ((status = 'open') = (resolved_at IS NULL))
);
CREATE INDEX trust_appeals_status ON trust_appeals (status, review_due_at);
CREATE INDEX trust_appeals_store ON trust_appeals (store_slug, filed_at DESC);

-- GS1 check digit (GTIN-8/12/13/14): the data-consistency signal counts products whose GTIN fails it.
CREATE FUNCTION gtin_check_digit_ok(g text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN g IS NULL OR g !~ '^[0-9]{8,14}$' OR length(g) NOT IN (8, 12, 13, 14) THEN false ELSE
    (10 - (SELECT sum(substr(g, length(g) - i, 1)::int * CASE WHEN i % 2 = 1 THEN 3 ELSE 1 END)
           FROM generate_series(1, length(g) - 1) AS i) % 10) % 10 = substr(g, length(g), 1)::int
  END
$$;
