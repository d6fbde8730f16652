-- OAuth credentials that can be revoked (audit X-1; docs/access.md "Revoking OAuth credentials").
--
-- 1. A refresh-token family's absolute end. Every rotation issues a token for 30 days, but never past the family's
--    `family_expires_at`, set when the authorization code is redeemed (REFRESH_FAMILY_MAX_SECONDS, 90 days) and
--    carried to every token rotated from it: a grant lives at most 90 days from the consent, however often it is used.
--    Rows written before this migration have none: their family gets one at its next rotation (90 days from then).
ALTER TABLE oauth_refresh_tokens ADD COLUMN family_expires_at timestamptz NULL;

-- 2. The live token of each family (one per family: a rotation spends the old one), by user for the signed-in user's
--    list of grants (GET /api/v1/oauth/grants) and by client for revoking a deleted client's families. Only live rows
--    are indexed, so both stay small. Building them takes a SHARE lock on oauth_refresh_tokens (token rotations wait)
--    while it is read; on a large table an operator may build them first with CREATE INDEX CONCURRENTLY (the same
--    definitions), and this migration then finds them.
CREATE INDEX IF NOT EXISTS oauth_refresh_tokens_live_user_idx ON oauth_refresh_tokens (user_id, created_at)
  WHERE used_at IS NULL AND revoked_at IS NULL;
CREATE INDEX IF NOT EXISTS oauth_refresh_tokens_live_client_idx ON oauth_refresh_tokens (client_id)
  WHERE used_at IS NULL AND revoked_at IS NULL;
-- And the revoked rows by family: every MCP request with a code-flow access token asks whether its family (the token's
-- `gid`) was revoked. The family index would read all of a family's rows (one per refresh, ~3,000 in 30 days of
-- 15-minute refreshes) to find none; this one holds revoked rows only, so the usual answer, "none", is one probe.
CREATE INDEX IF NOT EXISTS oauth_refresh_tokens_revoked_family_idx ON oauth_refresh_tokens (family_id)
  WHERE revoked_at IS NOT NULL;

-- 3. A client deleted by its owner or an operator (DELETE /api/v1/oauth/clients/{client_id}) is marked, not removed at
--    once: its row says "deleted" to every MCP request still carrying one of its access tokens (refused from then on),
--    and to the token endpoint (invalid_client). The retention job removes it a day later (gateway/oauth/clients.ts
--    deleteUnusedClients), when every access token it was given has long expired: a token naming a client that has no
--    row any more cannot be live.
ALTER TABLE oauth_clients ADD COLUMN deleted_at timestamptz NULL;
CREATE INDEX oauth_clients_deleted_idx ON oauth_clients (deleted_at) WHERE deleted_at IS NOT NULL;

-- 4. Access tokens revoked before their end (RFC 7009 on an access token): its `jti` until its `exp`. Every MCP
--    request with an access token looks its jti up here (gateway/oauth/revocation.ts). A row is of no use once the
--    token expired; each revocation deletes a batch of expired rows, so the table holds about the revocations of the
--    last 15 minutes.
CREATE TABLE oauth_revoked_access_tokens (
  jti        text PRIMARY KEY CHECK (length(jti) <= 100),
  client_id  text NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_revoked_access_tokens_expires_idx ON oauth_revoked_access_tokens (expires_at);
