-- Webhook endpoints of a store and one delivery per (event, endpoint). The `webhook/<endpointId>` actor is the
-- single writer of its endpoint row and of that endpoint's deliveries; the dispatcher only INSERTs deliveries
-- (fan-out of the outbox, see actors/webhook/dispatcher.ts).

CREATE TABLE webhook_endpoints (
  id                          uuid        PRIMARY KEY,
  store_slug                  text        NOT NULL REFERENCES stores (slug) ON DELETE CASCADE ON UPDATE CASCADE,
  url                         text        NOT NULL,
  events                      text[]      NOT NULL,
  -- Secrets are needed in clear to sign, so they are sealed (infra/crypto.ts, AES-256-GCM under a sub-key of
  -- SECRET_KEY, AAD bound to the endpoint id), never stored in clear nor hashed.
  secret_sealed               text        NOT NULL,
  -- During a rotation the retiring secret keeps signing (a second v1) until previous_secret_expires_at.
  previous_secret_sealed      text,
  previous_secret_expires_at  timestamptz,
  -- Circuit breaker (actors/webhook/schedule.ts BreakerState).
  breaker                     jsonb       NOT NULL DEFAULT '{"status": "closed", "consecutiveFailures": 0}'::jsonb,
  created_by                  uuid        REFERENCES users (id) ON DELETE SET NULL,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  deleted_at                  timestamptz,
  CONSTRAINT webhook_endpoints_events_nonempty CHECK (cardinality(events) >= 1),
  CONSTRAINT webhook_endpoints_events_known
    CHECK (events <@ ARRAY['order.created', 'order.status_changed', 'checkout.abandoned']::text[]),
  CONSTRAINT webhook_endpoints_previous_pair
    CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL))
);
CREATE INDEX webhook_endpoints_store ON webhook_endpoints (store_slug) WHERE deleted_at IS NULL;

-- status: pending (not yet tried, or redelivery requested), failed (last attempt failed, retry at
-- next_attempt_at), delivered (a 2xx), dead (retries exhausted or endpoint deleted; replay with redeliver).
CREATE TABLE webhook_deliveries (
  id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  event_id         uuid        NOT NULL REFERENCES webhook_events (id),
  endpoint_id      uuid        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  store_slug       text        NOT NULL,
  status           text        NOT NULL DEFAULT 'pending',
  attempts         integer     NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  -- Start of the current retry horizon (72 h); reset by a manual redelivery.
  first_attempt_at timestamptz,
  last_attempt_at  timestamptz,
  last_status_code integer,
  last_error       text,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_deliveries_event_endpoint_unique UNIQUE (event_id, endpoint_id),
  CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
  CONSTRAINT webhook_deliveries_due_when_open
    CHECK (status NOT IN ('pending', 'failed') OR next_attempt_at IS NOT NULL)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status IN ('pending', 'failed');
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries (endpoint_id, created_at DESC);

-- Append-only log of every attempt (what the dashboard shows under a delivery).
CREATE TABLE webhook_delivery_attempts (
  delivery_id  uuid        NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt      integer     NOT NULL,
  attempted_at timestamptz NOT NULL,
  status_code  integer,
  error        text,
  duration_ms  integer     NOT NULL,
  PRIMARY KEY (delivery_id, attempt, attempted_at)
);
