-- Agent API keys. The plaintext (agnt_ + 43 base62 chars) is shown once and never stored: `prefix` is the
-- non-secret lookup id (12 chars after agnt_), `key_hash` the hex HMAC-SHA256(pepper, plaintext). `pepper_id`
-- names the config pepper that made the hash, so the pepper can be rotated without invalidating existing keys.
CREATE TABLE agent_keys (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  prefix       text NOT NULL UNIQUE CHECK (prefix ~ '^[0-9A-Za-z]{12}$'),
  key_hash     text NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  pepper_id    text NOT NULL DEFAULT 'v1',
  scopes       text[] NOT NULL DEFAULT ARRAY['search', 'compare', 'cart', 'merchants:read']::text[]
               CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['search', 'compare', 'cart', 'checkout',
                      'checkout:delegate', 'orders:read', 'merchants:read', 'protocols:discover']::text[]),
  tier         text NOT NULL DEFAULT 'STARTER'
               CHECK (tier IN ('STARTER', 'GROWTH', 'PRO', 'ENTERPRISE', 'SANDBOX')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NULL,
  revoked_at   timestamptz NULL,
  last_used_at timestamptz NULL,
  -- A SANDBOX key always expires (24 h after creation, set by the application).
  CHECK (tier <> 'SANDBOX' OR expires_at IS NOT NULL)
);

CREATE INDEX agent_keys_user_id_idx ON agent_keys (user_id);
