-- Merchant dashboard sessions (gateway/dashboard/session.ts). The cookie holds a random 256-bit id; only its
-- SHA-256 is stored, so a database read does not yield a usable session. `csrf_secret` is per session: the form
-- token is an HMAC of it under a key derived from SECRET_KEY, so neither the row alone nor the cookie alone
-- produces a valid token. `flash` is a one-shot notice shown after a POST-redirect-GET (never a secret).
CREATE TABLE dashboard_sessions (
  id_hash       text        PRIMARY KEY,
  user_id       uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  csrf_secret   text        NOT NULL,
  store_slug    text,
  flash         jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  CONSTRAINT dashboard_sessions_hash_format CHECK (id_hash ~ '^[0-9a-f]{64}$')
);
CREATE INDEX dashboard_sessions_user ON dashboard_sessions (user_id);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
