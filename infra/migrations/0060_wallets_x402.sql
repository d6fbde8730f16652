-- Agent wallets, merchant x402 configuration, the x402 rail's ledger and its nonce claims (P9).

-- One custodial wallet per agent identity (agent key). Written only by the `wallet/<agentKeyId>` actor; the
-- primary key makes "exactly one wallet" hold even if two hosts briefly both own the activation. The private key
-- is sealed with a sub-key of SECRET_KEY (AES-256-GCM, AAD = the wallet id) and never leaves the actor.
CREATE TABLE agent_wallets (
  agent_key_id       uuid        PRIMARY KEY,
  id                 uuid        NOT NULL UNIQUE,
  address            text        NOT NULL UNIQUE,
  network            text        NOT NULL,
  sealed_private_key text        NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT agent_wallets_network_check CHECK (network IN ('eip155:8453', 'eip155:84532')),
  CONSTRAINT agent_wallets_address_format CHECK (address ~ '^0x[0-9a-fA-F]{40}$')
);

-- A merchant's server-side x402 configuration. When a row exists it overrides the caller's `x402_config`
-- (spec, InitiateCheckoutRequest behaviour 5). `facilitator_url` null = the operator's allowlist default.
-- No foreign key to stores: the row for the seeded demo store exists before the seed writes the store.
CREATE TABLE store_x402_config (
  store_slug          text        PRIMARY KEY,
  pay_to              text        NOT NULL,
  network             text        NOT NULL,
  asset_address       text        NOT NULL,
  -- The token's EIP-712 domain (goes into PaymentRequirements.extra) and decimals.
  asset_name          text        NOT NULL DEFAULT 'USD Coin',
  asset_version       text        NOT NULL DEFAULT '2',
  asset_decimals      integer     NOT NULL DEFAULT 6,
  facilitator_url     text,
  facilitator_version text        NOT NULL DEFAULT 'v2',
  max_timeout_seconds integer     NOT NULL DEFAULT 300,
  -- JSON-RPC endpoint of the chain, used only to reconcile a settlement of unknown outcome (authorizationState).
  rpc_url             text,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT store_x402_config_pay_to_format CHECK (pay_to ~ '^0x[0-9a-fA-F]{40}$'),
  CONSTRAINT store_x402_config_asset_format CHECK (asset_address ~ '^0x[0-9a-fA-F]{40}$'),
  CONSTRAINT store_x402_config_network_format CHECK (network ~ '^eip155:[1-9][0-9]*$'),
  CONSTRAINT store_x402_config_facilitator_version CHECK (facilitator_version IN ('v1', 'v2')),
  CONSTRAINT store_x402_config_decimals CHECK (asset_decimals BETWEEN 0 AND 36),
  CONSTRAINT store_x402_config_timeout CHECK (max_timeout_seconds BETWEEN 10 AND 3600)
);

-- Demo store: Base Sepolia USDC paid to a dev-only address (anvil #5); tests point the row at the local devnet.
INSERT INTO store_x402_config (store_slug, pay_to, network, asset_address, facilitator_url)
VALUES ('demo-store', '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc', 'eip155:84532',
        '0x036CbD53842c5426634e7929541eC2318f3dCF7e', NULL);

-- EIP-3009 nonces accepted by our local check, claimed atomically (INSERT ... ON CONFLICT DO NOTHING) so two
-- concurrent requests with one payload cannot both pass. Key: chain, token, payer, nonce (x402-verify nonceKey).
CREATE TABLE x402_nonces (
  nonce_key  text        PRIMARY KEY,
  intent_id  text,
  claimed_at timestamptz NOT NULL DEFAULT now()
);

-- The x402 rail's ledger: one row per payment intent (deriveIntentId), written BEFORE the facilitator is called,
-- so a crash or a settle timeout leaves a record to reconcile against the chain (authorizationState).
CREATE TABLE x402_intents (
  intent_id           text        PRIMARY KEY,
  store_id            text        NOT NULL,
  amount_minor        bigint      NOT NULL,
  currency            char(3)     NOT NULL,
  network             text        NOT NULL,
  asset               text        NOT NULL,
  pay_to              text        NOT NULL,
  payer               text        NOT NULL,
  nonce               text        NOT NULL,
  valid_before        bigint      NOT NULL,
  facilitator_url     text        NOT NULL,
  facilitator_version text        NOT NULL,
  payload             jsonb       NOT NULL,
  requirements        jsonb       NOT NULL,
  rpc_url             text,
  -- The cart that prepared the authorization: a repeat of the same call after an unknown settlement is
  -- recognised as that cart's own payment, not as a replay.
  cart_id             text,
  token_id            text,
  -- recorded → settling → captured | failed | unknown (settle outcome not known; reconciled later)
  state               text        NOT NULL,
  transaction_hash    text,
  error_reason        text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT x402_intents_state_check CHECK (state IN ('recorded', 'settling', 'captured', 'failed', 'unknown'))
);
CREATE INDEX x402_intents_unsettled ON x402_intents (updated_at) WHERE state IN ('recorded', 'settling', 'unknown');
-- A prepared authorization (the `paymentToken` the x402 rail receives): per store, the verified payload and the
-- requirements it was checked against. Written by the checkout route after the local checks and /verify.
CREATE TABLE x402_authorizations (
  token_id            text        NOT NULL,
  store_id            text        NOT NULL,
  cart_id             text        NOT NULL,
  agent_key_id        uuid        NOT NULL,
  amount_minor        bigint      NOT NULL,
  currency            char(3)     NOT NULL,
  payload             jsonb       NOT NULL,
  requirements        jsonb       NOT NULL,
  facilitator_url     text        NOT NULL,
  facilitator_version text        NOT NULL,
  rpc_url             text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (token_id, store_id)
);

CREATE UNIQUE INDEX x402_intents_authorization ON x402_intents (network, lower(asset), lower(payer), lower(nonce));
