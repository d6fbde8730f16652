-- The operator's OAuth client listing (GET /api/v1/admin/oauth/clients, gateway/oauth/admin.ts) dates each
-- metadata-document client (client_id = the URL of its document, no oauth_clients row) by the first and last consent
-- on record: the oldest and newest of its authorization codes. Without an index it aggregated every row of oauth_codes,
-- registered clients' codes included (~3,700 pages, ~130 ms at 100,000 codes), so its cost grew with every consent
-- of every user. This partial index holds only the URL clients' codes, by client and creation: the listing walks it
-- one client at a time (two probes per client, however many users consented), and never reads registered clients'
-- codes. The predicate is the listing's own (and isMetadataDocumentId's: http or https), written the same way so the
-- planner can prove it.
--
-- Cost: one more index entry per authorization code of a metadata-document client (one per consent; marking a code
-- used stays HOT: neither column changes). Codes are few (a user's consents, deleted a few days after their grant
-- ends: infra/retention.ts), so building it takes oauth_codes' SHARE lock briefly (consents wait); IF NOT EXISTS lets
-- an operator build it CONCURRENTLY first with the same definition, as 0091's. A CONCURRENTLY build that failed leaves
-- an invalid index, which is made again here.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('oauth_codes_document_client') AND NOT indisvalid) THEN
    DROP INDEX oauth_codes_document_client;
  END IF;
END $$;
CREATE INDEX IF NOT EXISTS oauth_codes_document_client ON oauth_codes (client_id, created_at)
  WHERE client_id LIKE 'https://%' OR client_id LIKE 'http://%';
