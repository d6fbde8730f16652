-- OAuth: blocking a metadata-document client, a replayed code's tokens, dating an OAuth caller (review R2-1..R2-3).
--
-- 1. Client ID Metadata Document clients (client_id = the https URL of their document) have no oauth_clients row, so
--    deleting one had nothing to mark. An operator's DELETE /api/v1/oauth/clients/{client_id} on such an id writes it
--    here: the consent page and the token endpoint then treat it as unknown, and every access token it was given is
--    refused on its next MCP request (gateway/oauth/revocation.ts). Exact client_id, kept until an operator removes
--    the row (docs/operations.md "Blocking an OAuth client"); an operator's choice, so no retention.
CREATE TABLE oauth_blocked_clients (
  client_id  text PRIMARY KEY CHECK (length(client_id) BETWEEN 1 AND 2048),
  blocked_by uuid NULL REFERENCES users (id) ON DELETE SET NULL,
  blocked_at timestamptz NOT NULL DEFAULT now()
);

-- 2. A grant (the `gid` of a code-flow access token) revoked while it has no refresh-token row to mark: a replayed
--    authorization code of a client registered without the refresh_token grant (OAuth 2.1 §4.1.3: the tokens the code
--    issued are revoked). Kept while an access token of that family can still be live (ACCESS_TOKEN_TTL_SECONDS);
--    each such revocation deletes a batch of expired rows, as for oauth_revoked_access_tokens.
CREATE TABLE oauth_revoked_families (
  family_id  uuid PRIMARY KEY,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_revoked_families_expires_idx ON oauth_revoked_families (expires_at);

-- 3. A user's first authorization code for a client, which dates an OAuth caller for the risk gate
--    (gateway/mcp/tools/commerce.ts identityCreatedAt, on each MCP payment). Codes are few (deleted a few days after
--    their grant ends), so building it is quick; IF NOT EXISTS lets an operator build it CONCURRENTLY first.
CREATE INDEX IF NOT EXISTS oauth_codes_client_user_idx ON oauth_codes (client_id, user_id, created_at);
