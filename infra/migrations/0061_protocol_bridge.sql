-- The protocol bridge (gateway/bridge): other agent-payment protocols' sessions mapped onto our carts, and their
-- idempotency records.

-- An ACP or UCP checkout session: its id is the protocol-facing id; `cart_id` the cart it currently maps to
-- (an ACP update that changes the items moves the session to a new cart). `canceled_at` records the protocol's
-- own cancel when our checkout session had not started yet.
CREATE TABLE bridge_sessions (
  id            text        PRIMARY KEY,
  protocol      text        NOT NULL,
  agent_key_id  uuid        NOT NULL,
  cart_id       uuid        NOT NULL,
  -- Protocol fields we keep but do not act on (buyer, fulfillment address, chosen option).
  meta          jsonb       NOT NULL DEFAULT '{}'::jsonb,
  canceled_at   timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT bridge_sessions_protocol_check CHECK (protocol IN ('acp', 'ucp', 'ap2'))
);
CREATE INDEX bridge_sessions_owner ON bridge_sessions (agent_key_id, created_at DESC);

-- `Idempotency-Key` of a bridged request: the same key with the same request replays the stored answer; the same
-- key with a different request is refused. Scoped per agent key and protocol.
CREATE TABLE bridge_idempotency (
  protocol      text        NOT NULL,
  agent_key_id  uuid        NOT NULL,
  key           text        NOT NULL,
  request_hash  text        NOT NULL,
  status        integer,
  response      jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (protocol, agent_key_id, key)
);
