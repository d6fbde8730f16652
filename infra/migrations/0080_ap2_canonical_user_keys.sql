-- An AP2 user key's thumbprint names the key, not its spelling (review RV-2). 0077 hashed the JWK's coordinates as
-- sent, but one key has several spellings that every JOSE library here imports and verifies with: trailing `=`, the
-- 2 unused low bits of a 43-character base64url, and for P-256 leading zero bytes (the coordinate is read as an
-- integer, so 31 or 33 bytes import as the same point). Each spelling had its own thumbprint: the same user key
-- registered twice claimed one mandate twice (two paid carts), and 0077's cross-account cleanup and the proven
-- registration's take-over missed another account's row in another spelling. Registration now accepts only the
-- canonical spelling (gateway/bridge/ap2-keys.ts); this migration brings the existing rows to it.

-- The bytes of a base64url text as the JOSE libraries read it (padding dropped, unused bits ignored); NULL if it is
-- not base64url at all.
CREATE FUNCTION ap2_b64url_bytes(s text) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN t ~ '^[A-Za-z0-9_-]*$' AND length(t) % 4 <> 1
    THEN decode(translate(t, '-_', '+/') || repeat('=', (4 - length(t) % 4) % 4), 'base64') END
  FROM (SELECT rtrim(s, '=') AS t) r
$$;

-- A coordinate in its one spelling (RFC 7518 §6.2.1.2, RFC 8037 §2): the curve's full length, 32 bytes, unpadded
-- base64url. A P-256 coordinate is an integer, so leading zeros are dropped or added; an Ed25519 key is its 32 bytes
-- exactly. NULL when it cannot be one (another length, another curve, not base64url): such a key verifies nothing.
CREATE FUNCTION ap2_jwk_coordinate(c text, crv text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT rtrim(translate(encode(k, 'base64'), '+/', '-_'), '=')
  FROM (SELECT CASE
      WHEN crv = 'P-256' AND octet_length(ltrim(b, '\x00'::bytea)) <= 32
        THEN decode(repeat('00', 32 - octet_length(ltrim(b, '\x00'::bytea))), 'hex') || ltrim(b, '\x00'::bytea)
      WHEN crv = 'Ed25519' AND octet_length(b) = 32 THEN b END AS k
    FROM (SELECT ap2_b64url_bytes(c) AS b) d) e
$$;

-- The RFC 7638 thumbprint over the canonical members, so any spelling of a key hashes as the key (the generated
-- column ap2_user_keys.thumbprint and the gateway keep asking this one definition). NULL for a key with no canonical
-- form. Stored thumbprints are recomputed below by rewriting each row.
CREATE OR REPLACE FUNCTION ap2_jwk_thumbprint(jwk jsonb) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT rtrim(translate(encode(sha256(convert_to(
    CASE WHEN jwk->>'kty' = 'EC'
      THEN '{"crv":"' || (jwk->>'crv') || '","kty":"EC","x":"' || ap2_jwk_coordinate(jwk->>'x', jwk->>'crv')
        || '","y":"' || ap2_jwk_coordinate(jwk->>'y', jwk->>'crv') || '"}'
      ELSE '{"crv":"' || (jwk->>'crv') || '","kty":"' || (jwk->>'kty') || '","x":"' || ap2_jwk_coordinate(jwk->>'x', jwk->>'crv') || '"}'
    END, 'UTF8')), 'base64'), '+/', '-_'), '=')
$$;

-- Old (per spelling) → new (per key) thumbprints, read before the rows are rewritten.
CREATE TEMP TABLE ap2_0080_thumbprints ON COMMIT DROP AS
  SELECT DISTINCT thumbprint AS old, ap2_jwk_thumbprint(jwk) AS new FROM ap2_user_keys WHERE thumbprint IS NOT NULL;

-- A key with no canonical form cannot be imported, so it never verified a mandate: removed.
DELETE FROM ap2_user_keys WHERE ap2_jwk_thumbprint(jwk) IS NULL;

-- Claims made under a variant spelling's thumbprint move to the key's: one claim per (key, mandate id). Where two
-- spellings both claimed a mandate (it paid twice before this), the claim under the canonical spelling stays, else the
-- earliest; the other agent key is refused from now on. A claim whose key is no longer registered keeps its thumbprint.
INSERT INTO ap2_mandate_agents (thumbprint, payment_mandate_id, agent_key_id, created_at)
SELECT DISTINCT ON (m.new, a.payment_mandate_id) m.new, a.payment_mandate_id, a.agent_key_id, a.created_at
FROM ap2_mandate_agents a JOIN ap2_0080_thumbprints m ON m.old = a.thumbprint
WHERE m.new IS NOT NULL AND m.new <> m.old
ORDER BY m.new, a.payment_mandate_id, a.created_at
ON CONFLICT DO NOTHING;
DELETE FROM ap2_mandate_agents a USING ap2_0080_thumbprints m
WHERE a.thumbprint = m.old AND m.new IS NOT NULL AND m.new <> m.old;

-- Every row in the canonical spelling, public members only (what registration stores); rewriting `jwk` recomputes the
-- generated thumbprint with the function above.
UPDATE ap2_user_keys SET jwk = CASE WHEN jwk->>'kty' = 'EC'
  THEN jsonb_build_object('kty', 'EC', 'crv', jwk->>'crv', 'x', ap2_jwk_coordinate(jwk->>'x', jwk->>'crv'), 'y', ap2_jwk_coordinate(jwk->>'y', jwk->>'crv'))
  ELSE jsonb_build_object('kty', jwk->>'kty', 'crv', jwk->>'crv', 'x', ap2_jwk_coordinate(jwk->>'x', jwk->>'crv')) END;

-- 0077's cleanup again, now that spellings no longer hide a key held by two accounts. A key held under more than one
-- account stays with the account that proved it first (on a live agent key): the proof shows that account has the
-- device, and the others are what registration would have refused (409) or taken over. A key no account proved is
-- removed from every account, as in 0077: nobody can tell which one has the device.
WITH held AS (
  SELECT u.thumbprint, k.user_id, min(u.proven_at) FILTER (WHERE k.revoked_at IS NULL) AS proven_at
  FROM ap2_user_keys u JOIN agent_keys k ON k.id = u.agent_key_id
  GROUP BY u.thumbprint, k.user_id
), shared AS (
  SELECT thumbprint FROM held GROUP BY thumbprint HAVING count(*) > 1
), keeper AS (
  SELECT DISTINCT ON (thumbprint) thumbprint, user_id FROM held
  WHERE thumbprint IN (SELECT thumbprint FROM shared) AND proven_at IS NOT NULL
  ORDER BY thumbprint, proven_at, user_id
)
DELETE FROM ap2_user_keys u USING agent_keys k
WHERE k.id = u.agent_key_id AND u.thumbprint IN (SELECT thumbprint FROM shared)
  AND NOT EXISTS (SELECT 1 FROM keeper WHERE keeper.thumbprint = u.thumbprint AND keeper.user_id = k.user_id);
