-- Signing keys shared by every process (user session JWTs, OAuth access tokens, trust-score JWS). Private keys
-- are sealed with the key-encryption key (AES-256-GCM, infra/crypto.ts); only the public JWK is stored in clear.
CREATE TABLE signing_keys (
  kid          text PRIMARY KEY,
  purpose      text NOT NULL CHECK (purpose IN ('jwt', 'trust')),
  public_jwk   jsonb NOT NULL,
  sealed_private text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  retired_at   timestamptz NULL,
  expires_at   timestamptz NULL
);
-- at most one active key per purpose
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (purpose) WHERE retired_at IS NULL;
