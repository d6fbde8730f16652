-- An account holds at most 25 live OAuth clients registered with its session (gateway/oauth/register.ts
-- OWNED_CLIENTS_MAX, audit A-5): every such registration counts the owner's live clients, and GET /api/v1/oauth/clients
-- and the dashboard's Connected apps list them. Without an index both read every row of oauth_clients; this one holds
-- the live owned clients by owner, so both read the owner's few rows. oauth_clients is small and written only by
-- registrations and deletions (rare, bucketed per address), so a plain build's short SHARE lock is harmless.
CREATE INDEX IF NOT EXISTS oauth_clients_owner_live ON oauth_clients (owner_user_id) WHERE owner_user_id IS NOT NULL AND deleted_at IS NULL;
