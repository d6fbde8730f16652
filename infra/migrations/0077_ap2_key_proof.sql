-- One signed AP2 mandate pays one cart, whoever presents it (audit V1). Before this, the mandate -> cart binding was
-- per agent key, and any account could register any user's *public* key with no proof: one mandate paid once per
-- agent key that had the signer's key registered, on this account or another (gateway/bridge/ap2-auth.ts,
-- ap2-keys.ts; docs/protocols.md "User authorization").

-- RFC 7638 JWK thumbprint (base64url SHA-256 of the required members, in order, no spaces): the identity of a user
-- key, whatever kid or agent key it is registered under. The one definition: ap2_user_keys.thumbprint is generated
-- from it, and the gateway asks it rather than computing its own. Declared IMMUTABLE for the generated column:
-- convert_to is STABLE only because it reads the database encoding, which a database never changes.
CREATE FUNCTION ap2_jwk_thumbprint(jwk jsonb) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT rtrim(translate(encode(sha256(convert_to(
    CASE WHEN jwk->>'kty' = 'EC'
      THEN '{"crv":"' || (jwk->>'crv') || '","kty":"EC","x":"' || (jwk->>'x') || '","y":"' || (jwk->>'y') || '"}'
      ELSE '{"crv":"' || (jwk->>'crv') || '","kty":"' || (jwk->>'kty') || '","x":"' || (jwk->>'x') || '"}'
    END, 'UTF8')), 'base64'), '+/', '-_'), '=')
$$;

-- proven_at: when the registering account proved it holds the private key (a JWS by the key over a server nonce,
-- the agent key id and the kid). NULL = registered before proofs were required: kept working (below).
ALTER TABLE ap2_user_keys
  ADD COLUMN thumbprint text GENERATED ALWAYS AS (ap2_jwk_thumbprint(jwk)) STORED,
  ADD COLUMN proven_at  timestamptz;
CREATE INDEX ap2_user_keys_thumbprint ON ap2_user_keys (thumbprint);

-- Registration nonces: issued by a PUT without a proof, consumed (once) by the PUT that carries the proof.
CREATE TABLE ap2_key_nonces (
  nonce        text        PRIMARY KEY,
  agent_key_id uuid        NOT NULL REFERENCES agent_keys (id) ON DELETE CASCADE,
  expires_at   timestamptz NOT NULL
);
CREATE INDEX ap2_key_nonces_expiry ON ap2_key_nonces (expires_at);
CREATE INDEX ap2_key_nonces_agent_key ON ap2_key_nonces (agent_key_id, expires_at);

-- A signed mandate (its id within its signer's key) belongs to the first agent key that presents it with a valid
-- signature; bridge_sessions' `ap2` row then binds it, for that key, to one cart. Together: one mandate, one cart,
-- across every agent key and account. No foreign key: a deleted agent key's mandates stay spent.
CREATE TABLE ap2_mandate_agents (
  thumbprint         text        NOT NULL,
  payment_mandate_id text        NOT NULL,
  agent_key_id       uuid        NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT ap2_mandate_agents_pk PRIMARY KEY (thumbprint, payment_mandate_id)
);

-- Mandates already bound (per agent key) stay with that key: each is claimed for every user key registered on it
-- (the signer is not recorded; a false claim only reserves that mandate id of that key for the same agent key).
INSERT INTO ap2_mandate_agents (thumbprint, payment_mandate_id, agent_key_id, created_at)
SELECT DISTINCT ON (u.thumbprint, s.meta->>'payment_mandate_id') u.thumbprint, s.meta->>'payment_mandate_id', s.agent_key_id, s.created_at
FROM bridge_sessions s JOIN ap2_user_keys u ON u.agent_key_id = s.agent_key_id
WHERE s.protocol = 'ap2' AND s.meta ? 'payment_mandate_id'
ORDER BY u.thumbprint, s.meta->>'payment_mandate_id', s.created_at
ON CONFLICT DO NOTHING;

-- Registrations without proof keep working, except a key registered under more than one account: nobody can tell
-- which account holds the device, and any of them could spend the others' mandates first. Those are removed from
-- every account; the device's owner registers it again with a proof.
DELETE FROM ap2_user_keys WHERE thumbprint IN (
  SELECT u.thumbprint FROM ap2_user_keys u JOIN agent_keys k ON k.id = u.agent_key_id
  GROUP BY u.thumbprint HAVING count(DISTINCT k.user_id) > 1);
