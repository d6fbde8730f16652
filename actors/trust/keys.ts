/**
 * Persistence of the trust signing key set in `signing_keys` (purpose 'trust'), shared by every process.
 *
 * - The private key is stored only sealed (AES-256-GCM under the key-encryption key, signing.ts's AAD).
 * - `retired_at` marks the key that no longer signs; `expires_at` holds the key's latest signature expiry
 *   (`maxExp`), so a retired key is published until that moment and never after. A retired key that never
 *   signed gets `expires_at = retired_at` and disappears from the JWKS at once.
 * - Creation is race-safe the same way as the JWT keys (infra/secrets.ts): the partial unique index allows one
 *   active key per purpose, so concurrent starters insert with ON CONFLICT DO NOTHING and then read the winner.
 */
import type { JWK } from "jose";
import type { Sql } from "../../infra/db.ts";
import { exportSigningKeySealed, generateSigningKey, importSigningKeySealed, TrustKeySet, type PublicJwk, type SigningKey } from "./signing.ts";

interface KeyRow {
  kid: string;
  public_jwk: PublicJwk;
  sealed_private: string;
  created_at: Date;
  retired_at: Date | null;
  expires_at: Date | null;
}

const toSeconds = (d: Date | null): number | null => (d === null ? null : Math.floor(d.getTime() / 1000));
const toDate = (s: number | null): Date | null => (s === null ? null : new Date(s * 1000));

/** Makes sure an active trust key exists (creates one if not). Safe when several processes start together. */
export async function ensureTrustKey(sql: Sql, kek: Uint8Array, nowMs: number): Promise<void> {
  const [active] = await sql`SELECT kid FROM signing_keys WHERE purpose = 'trust' AND retired_at IS NULL`;
  if (active) return;
  const key = await generateSigningKey(Math.floor(nowMs / 1000));
  await sql`INSERT INTO signing_keys (kid, purpose, public_jwk, sealed_private, created_at)
            VALUES (${key.kid}, 'trust', ${sql.json(key.publicJwk as never)}, ${await exportSigningKeySealed(key, kek)}, ${new Date(nowMs)})
            ON CONFLICT DO NOTHING`;
}

/** Loads the key set: the active key plus every retired key whose signatures have not all expired yet. */
export async function loadTrustKeySet(sql: Sql, kek: Uint8Array, nowMs: number): Promise<TrustKeySet> {
  await ensureTrustKey(sql, kek, nowMs);
  const rows = await sql<KeyRow[]>`
    SELECT kid, public_jwk, sealed_private, created_at, retired_at, expires_at FROM signing_keys
    WHERE purpose = 'trust' AND (retired_at IS NULL OR expires_at > ${new Date(nowMs)})
    ORDER BY created_at`;
  const keys: SigningKey[] = [];
  for (const r of rows) {
    const k = await importSigningKeySealed(kek, r.sealed_private);
    // The columns are the source of truth for rotation metadata (the sealed copy is written once, at creation).
    k.retiredAt = toSeconds(r.retired_at);
    k.maxExp = toSeconds(r.expires_at);
    keys.push(k);
  }
  return TrustKeySet.fromKeys(keys);
}

/** Writes back what signing and rotation changed: retirements, latest signature expiries, new keys. */
export async function saveTrustKeySet(tx: Sql, kek: Uint8Array, keys: TrustKeySet): Promise<void> {
  // Retired keys first: the new active key may only be inserted once the old one is retired (one active per purpose).
  const ordered = [...keys.allKeys()].sort((a, b) => Number(a.retiredAt === null) - Number(b.retiredAt === null));
  for (const k of ordered) {
    const expires = toDate(k.retiredAt !== null && k.maxExp === null ? k.retiredAt : k.maxExp);
    const [row] = await tx`UPDATE signing_keys SET retired_at = ${toDate(k.retiredAt)}, expires_at = ${expires}
                           WHERE kid = ${k.kid} AND purpose = 'trust' RETURNING kid`;
    if (!row) {
      await tx`INSERT INTO signing_keys (kid, purpose, public_jwk, sealed_private, created_at, retired_at, expires_at)
               VALUES (${k.kid}, 'trust', ${tx.json(k.publicJwk as never)}, ${await exportSigningKeySealed(k, kek)},
                       ${new Date(k.createdAt * 1000)}, ${toDate(k.retiredAt)}, ${expires})`;
    }
  }
}

/**
 * Marks keys that `prune` dropped from memory (retired and with no unexpired signature outstanding) as retired
 * and expired in the database, so no JWKS publishes them again.
 */
export async function retireDroppedKeys(tx: Sql, kids: readonly string[], nowMs: number): Promise<void> {
  if (kids.length === 0) return;
  await tx`UPDATE signing_keys SET retired_at = coalesce(retired_at, ${new Date(nowMs)}),
             expires_at = least(coalesce(expires_at, ${new Date(nowMs)}), ${new Date(nowMs)})
           WHERE purpose = 'trust' AND kid IN ${tx(kids as string[])}`;
}

/** The published trust keys (public halves only), read straight from the database so any gateway can serve them. */
export async function publishedTrustJwks(sql: Sql, nowMs: number): Promise<PublicJwk[]> {
  const rows = await sql<{ public_jwk: PublicJwk }[]>`
    SELECT public_jwk FROM signing_keys
    WHERE purpose = 'trust' AND (retired_at IS NULL OR expires_at > ${new Date(nowMs)})
    ORDER BY retired_at IS NOT NULL, created_at DESC`;
  return rows.map((r) => {
    const { d: _d, ...pub } = r.public_jwk as JWK & PublicJwk;
    return pub as PublicJwk;
  });
}
