-- OAuth 2.1 for the per-store MCP endpoints (docs/access.md, "OAuth 2.1 for MCP").
-- Secrets are never stored in clear: client secrets, authorization codes and refresh tokens are kept as
-- hex SHA-256 digests (each is 256 random bits, so a keyed hash would add nothing against brute force).

-- Registered clients (RFC 7591 dynamic registration). Client ID Metadata Documents are not stored here: their
-- client_id is the document's https URL and the document is fetched (and cached in memory) when used.
CREATE TABLE oauth_clients (
  client_id          text PRIMARY KEY,
  secret_hash        text NULL CHECK (secret_hash IS NULL OR secret_hash ~ '^[0-9a-f]{64}$'),
  client_name        text NOT NULL DEFAULT '' CHECK (length(client_name) <= 200),
  redirect_uris      text[] NOT NULL DEFAULT '{}',
  grant_types        text[] NOT NULL
                     CHECK (grant_types <@ ARRAY['authorization_code', 'refresh_token', 'client_credentials']::text[]),
  token_endpoint_auth_method text NOT NULL
                     CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
  scope              text NOT NULL,
  -- The user who registered the client with a session token; client_credentials tokens act for this user.
  owner_user_id      uuid NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at         timestamptz NOT NULL DEFAULT now(),
  -- a confidential client has a secret, a public one has none
  CHECK ((token_endpoint_auth_method = 'none') = (secret_hash IS NULL)),
  -- machine-to-machine needs a secret and an owner to act for
  CHECK (NOT ('client_credentials' = ANY (grant_types)) OR (secret_hash IS NOT NULL AND owner_user_id IS NOT NULL))
);

-- Authorization codes: single use (used_at set atomically), 60 s, bound to client, redirect URI, PKCE challenge
-- (S256 only) and resource. `family_id` names the refresh-token family the code started, so replaying a used
-- code revokes what it issued.
CREATE TABLE oauth_codes (
  code_hash      text PRIMARY KEY CHECK (code_hash ~ '^[0-9a-f]{64}$'),
  client_id      text NOT NULL,
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  redirect_uri   text NOT NULL,
  code_challenge text NOT NULL CHECK (code_challenge ~ '^[A-Za-z0-9_-]{43}$'),
  scopes         text[] NOT NULL,
  resource       text NOT NULL,
  family_id      uuid NOT NULL,
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at);

-- Refresh tokens: rotated on every use (used_at set atomically). Presenting a used token again is taken as
-- theft: the whole family is revoked. 30 days.
CREATE TABLE oauth_refresh_tokens (
  token_hash   text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  family_id    uuid NOT NULL,
  client_id    text NOT NULL,
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  scopes       text[] NOT NULL,
  resource     text NOT NULL,
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz NULL,
  revoked_at   timestamptz NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_refresh_tokens_family_idx ON oauth_refresh_tokens (family_id);
