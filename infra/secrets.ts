/**
 * Secrets every process derives from the one key-encryption key (SECRET_KEY): sub-keys are HMAC-derived per
 * purpose so one leaked sub-key reveals nothing about the others, and signing keys are shared through Postgres
 * (sealed) so every gateway of a cluster signs and verifies with the same keys.
 */
import { createHmac } from "node:crypto";
import type { JWK } from "jose";
import type { Sql } from "./db.ts";
import { ConfigError } from "./config.ts";
import { openString, seal, SealError } from "./crypto.ts";
import { generateJwtKeyPair, type JwtKeyPair } from "./jwt.ts";

export function deriveKey(kek: Uint8Array, purpose: string): Buffer {
  return createHmac("sha256", kek).update(`acs-derive:${purpose}`).digest();
}

/** The pepper of agent-key hashes. */
export function agentKeyPepper(kek: Uint8Array): Buffer {
  return deriveKey(kek, "agent-key-pepper-v1");
}

/**
 * Refuses to start a process whose key-encryption key does not open this deployment's sealed keys (audit M-1): a
 * gateway or actor host started with another SECRET_KEY (or none, generating one in its own DATA_DIR) joined the
 * deployment healthy, then answered every agent key 401 (the key pepper derives from the KEK) and every log-in 500.
 * The newest JWT signing key is the probe: every gateway seals and opens it with the KEK. A database without one (a
 * new deployment) passes: the first gateway creates it.
 */
export async function assertKekOpensDeployment(sql: Sql, kek: Uint8Array): Promise<void> {
  const [row] = await sql<{ sealed_private: string }[]>`
    SELECT sealed_private FROM signing_keys WHERE purpose = 'jwt' ORDER BY created_at DESC LIMIT 1`;
  if (!row) return;
  try {
    openString(kek, row.sealed_private, "jwt");
  } catch (err) {
    if (!(err instanceof SealError)) throw err;
    throw new ConfigError(
      "SECRET_KEY",
      "the deployment's key: it does not open the signing keys sealed in this database (every gateway and actor host of a deployment needs the same SECRET_KEY; without it a process generates its own in DATA_DIR/secret.key; a database restored from another deployment needs that deployment's SECRET_KEY)",
      "<another key>",
    );
  }
}

/** Loads the active JWT signing key, creating it once (safe when several processes start together). */
export async function loadJwtKeys(sql: Sql, kek: Uint8Array): Promise<{ active: JwtKeyPair; previous: JWK[] }> {
  const read = async () =>
    sql<{ kid: string; public_jwk: JWK; sealed_private: string; retired_at: Date | null }[]>`
      SELECT kid, public_jwk, sealed_private, retired_at FROM signing_keys
      WHERE purpose = 'jwt' AND (expires_at IS NULL OR expires_at > now()) ORDER BY created_at DESC`;
  let rows = await read();
  if (!rows.some((r) => r.retired_at === null)) {
    const pair = await generateJwtKeyPair();
    await sql`INSERT INTO signing_keys (kid, purpose, public_jwk, sealed_private)
              VALUES (${pair.kid}, 'jwt', ${sql.json(pair.publicJwk as never)}, ${seal(kek, JSON.stringify(pair.privateJwk), "jwt")})
              ON CONFLICT DO NOTHING`;
    rows = await read();
  }
  const active = rows.find((r) => r.retired_at === null);
  if (!active) throw new Error("no active JWT signing key");
  const privateJwk = JSON.parse(openString(kek, active.sealed_private, "jwt")) as JWK;
  return {
    active: { kid: active.kid, publicJwk: active.public_jwk, privateJwk },
    previous: rows.filter((r) => r.retired_at !== null).map((r) => r.public_jwk),
  };
}
