-- Review Y-2 (session 17): the decision the gateway made at /verify, by its own X402_FACILITATOR_ALLOWLIST and
-- ALLOW_PRIVATE_URLS, that the facilitator may be on a private or loopback address (facilitatorMayBePrivate), carried
-- from the prepared authorization to the intent, so the /settle on an actor host whose configuration lacks the
-- allowlist does not refuse the facilitator the gateway verified through. The SSRF guard still runs at every /settle
-- (never-valid address classes, and public-only when this is false). Rows from before: false, the actor host's own
-- policy decides as before.
ALTER TABLE x402_authorizations ADD COLUMN facilitator_allow_private boolean NOT NULL DEFAULT false;
ALTER TABLE x402_intents ADD COLUMN facilitator_allow_private boolean NOT NULL DEFAULT false;
