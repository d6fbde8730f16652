-- AP2 user authorization keys (gateway/bridge/ap2-auth.ts). The human who owns an agent key registers the public
-- key of their device; a payment mandate's `user_authorization` must be a JWS by one of these keys over the
-- mandate's hashes. Public keys only (the JWK's private members are refused before they get here).
CREATE TABLE ap2_user_keys (
  agent_key_id uuid        NOT NULL REFERENCES agent_keys (id) ON DELETE CASCADE,
  kid          text        NOT NULL,
  alg          text        NOT NULL,
  jwk          jsonb       NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT ap2_user_keys_pk PRIMARY KEY (agent_key_id, kid),
  CONSTRAINT ap2_user_keys_kid_format CHECK (kid ~ '^[A-Za-z0-9._-]{1,128}$'),
  CONSTRAINT ap2_user_keys_alg_check CHECK (alg IN ('ES256', 'EdDSA')),
  CONSTRAINT ap2_user_keys_jwk_object CHECK (jsonb_typeof(jwk) = 'object' AND NOT (jwk ? 'd'))
);
