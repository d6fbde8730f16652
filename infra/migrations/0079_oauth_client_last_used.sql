-- Registered OAuth clients are kept only while they are used (audit W-1): anyone may register one (RFC 7591) and
-- nothing deleted them. `last_used_at` is stamped at consent and at the token endpoint, at most once an hour per
-- client (gateway/oauth/clients.ts `touchClient`); the sweep (gateway/oauth/clients.ts `deleteUnusedClients`, a
-- rule of the data retention job) deletes clients without an owner never used 24 h after registration, or unused for
-- longer than a refresh token lives. Clients registered with a user session (owner_user_id) are never swept.
ALTER TABLE oauth_clients ADD COLUMN last_used_at timestamptz NULL;

-- Clients already in use keep working: their last use is the newest code or refresh token issued to them. Those
-- without any were never consented to and go with the first sweep (if registered more than 24 h ago).
UPDATE oauth_clients c SET last_used_at = u.at
FROM (
  SELECT client_id, max(created_at) AS at FROM (
    SELECT client_id, created_at FROM oauth_codes
    UNION ALL
    SELECT client_id, created_at FROM oauth_refresh_tokens
  ) issued GROUP BY client_id
) u
WHERE u.client_id = c.client_id;

-- The sweep's two conditions: `last_used_at IS NULL AND created_at < …` and `last_used_at < …`, ownerless only.
CREATE INDEX oauth_clients_unowned_use_idx ON oauth_clients (last_used_at, created_at) WHERE owner_user_id IS NULL;
