/**
 * Signed trust scores: Ed25519 keys, compact JWS (alg EdDSA), a public JWKS and key rotation.
 *
 * Rotation: the active key signs. `rotate` makes a new active key and retires the old one; a retired key stays in
 * the JWKS until the last signature it made has expired (its `maxExp`), so every signature ever handed out
 * remains verifiable for its whole lifetime. `prune` then drops it. Private keys leave memory only sealed with
 * infra/crypto.ts (AES-256-GCM under a key-encryption key).
 */
import {
  SignJWT,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  createLocalJWKSet,
  type JWK,
  type JWTPayload,
} from "jose";
import { open, seal } from "../../infra/crypto.ts";
import type { EngineId } from "./types.ts";

export const SIGNING_ALG = "EdDSA" as const;
/** A signed score stays valid for 24 h: four 6-hour refresh cycles, so one failed refresh never leaves a gap. */
export const DEFAULT_SIGNATURE_TTL_SECONDS = 24 * 3600;
const SEAL_AAD = "trust-signing-key:v1";

export interface PublicJwk extends JWK {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid: string;
  alg: typeof SIGNING_ALG;
  use: "sig";
}

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: PublicJwk;
  /** epoch seconds */
  createdAt: number;
  /** epoch seconds; set when the key stops signing */
  retiredAt: number | null;
  /** epoch seconds of the latest `exp` this key has signed; null if it never signed */
  maxExp: number | null;
}

export type ScoreScale = "0-100" | "0-1";

export interface ScoreToSign {
  storeSlug: string;
  score: number;
  scale: ScoreScale;
  engine: EngineId;
  methodologyVersion: string;
}

/** The JWS payload, claim names as published. */
export interface SignedScoreClaims extends JWTPayload {
  store_slug: string;
  score: number;
  scale: ScoreScale;
  engine: EngineId;
  methodology_version: string;
  /** ISO 8601; asserted by the issuer only (no qualified timestamp, qtsp.enabled = false). */
  signed_at: string;
  iat: number;
  exp: number;
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

async function publicJwkOf(privateJwk: JWK): Promise<PublicJwk> {
  if (privateJwk.kty !== "OKP" || privateJwk.crv !== "Ed25519" || typeof privateJwk.x !== "string") {
    throw new Error("not an Ed25519 key");
  }
  const base = { kty: "OKP" as const, crv: "Ed25519" as const, x: privateJwk.x };
  // kid = RFC 7638 thumbprint: anyone can recompute it from the public key, so it cannot be spoofed to another key.
  const kid = await calculateJwkThumbprint(base, "sha256");
  return { ...base, kid, alg: SIGNING_ALG, use: "sig" };
}

export async function generateSigningKey(now: number = nowSeconds()): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair("Ed25519", { extractable: true });
  const publicJwk = await publicJwkOf(await exportJWK(privateKey));
  return { kid: publicJwk.kid, privateKey, publicJwk, createdAt: now, retiredAt: null, maxExp: null };
}

interface SealedKeyRecord {
  jwk: JWK;
  createdAt: number;
  retiredAt: number | null;
  maxExp: number | null;
}

/** Private key and its rotation metadata, sealed for storage. */
export async function exportSigningKeySealed(key: SigningKey, kek: Uint8Array): Promise<string> {
  const jwk = await exportJWK(key.privateKey);
  const record: SealedKeyRecord = { jwk, createdAt: key.createdAt, retiredAt: key.retiredAt, maxExp: key.maxExp };
  return seal(kek, JSON.stringify(record), SEAL_AAD);
}

export async function importSigningKeySealed(kek: Uint8Array, sealed: string): Promise<SigningKey> {
  const record = JSON.parse(new TextDecoder().decode(open(kek, sealed, SEAL_AAD))) as SealedKeyRecord;
  const publicJwk = await publicJwkOf(record.jwk);
  const privateKey = (await importJWK({ ...record.jwk, alg: SIGNING_ALG }, SIGNING_ALG, { extractable: true })) as CryptoKey;
  return {
    kid: publicJwk.kid,
    privateKey,
    publicJwk,
    createdAt: record.createdAt,
    retiredAt: record.retiredAt,
    maxExp: record.maxExp,
  };
}

export interface SignOptions {
  /** epoch seconds */
  now?: number;
  ttlSeconds?: number;
  issuer?: string;
}

function checkScore(p: ScoreToSign): void {
  const max = p.scale === "0-100" ? 100 : 1;
  if (!Number.isFinite(p.score) || p.score < 0 || p.score > max) {
    throw new RangeError(`score ${p.score} is outside the ${p.scale} scale`);
  }
  if (!p.storeSlug) throw new RangeError("storeSlug is required");
}

export class TrustKeySet {
  private keys: SigningKey[];

  private constructor(keys: SigningKey[]) {
    if (keys.filter((k) => k.retiredAt === null).length !== 1) throw new Error("a key set needs exactly one active key");
    this.keys = keys;
  }

  static async create(now: number = nowSeconds()): Promise<TrustKeySet> {
    return new TrustKeySet([await generateSigningKey(now)]);
  }

  static fromKeys(keys: SigningKey[]): TrustKeySet {
    return new TrustKeySet([...keys]);
  }

  get active(): SigningKey {
    return this.keys.find((k) => k.retiredAt === null)!;
  }

  get activeKid(): string {
    return this.active.kid;
  }

  /** Every key still held (active first), for persistence. */
  allKeys(): readonly SigningKey[] {
    return [this.active, ...this.keys.filter((k) => k.retiredAt !== null)];
  }

  /** New active key; the old one is retired but keeps being published until its signatures expire. */
  async rotate(now: number = nowSeconds()): Promise<SigningKey> {
    const next = await generateSigningKey(now);
    this.active.retiredAt = now;
    this.keys.push(next);
    this.prune(now);
    return next;
  }

  /** Drops retired keys whose last signature has expired (or that never signed). Returns the dropped kids. */
  prune(now: number = nowSeconds()): string[] {
    const dropped = this.keys.filter((k) => k.retiredAt !== null && (k.maxExp === null || k.maxExp <= now));
    this.keys = this.keys.filter((k) => !dropped.includes(k));
    return dropped.map((k) => k.kid);
  }

  /** Public JWKS: the active key and every retired key with an unexpired signature outstanding. */
  jwks(now: number = nowSeconds()): { keys: PublicJwk[] } {
    return {
      keys: this.allKeys()
        .filter((k) => k.retiredAt === null || (k.maxExp !== null && k.maxExp > now))
        .map((k) => ({ ...k.publicJwk })),
    };
  }

  async signScore(payload: ScoreToSign, options: SignOptions = {}): Promise<string> {
    checkScore(payload);
    const now = options.now ?? nowSeconds();
    const exp = now + (options.ttlSeconds ?? DEFAULT_SIGNATURE_TTL_SECONDS);
    const key = this.active;
    const claims = {
      store_slug: payload.storeSlug,
      score: payload.score,
      scale: payload.scale,
      engine: payload.engine,
      methodology_version: payload.methodologyVersion,
      signed_at: new Date(now * 1000).toISOString(),
    };
    let builder = new SignJWT(claims)
      .setProtectedHeader({ alg: SIGNING_ALG, kid: key.kid, typ: "JWT" })
      .setSubject(payload.storeSlug)
      .setIssuedAt(now)
      .setExpirationTime(exp);
    if (options.issuer) builder = builder.setIssuer(options.issuer);
    const jws = await builder.sign(key.privateKey);
    key.maxExp = Math.max(key.maxExp ?? 0, exp);
    return jws;
  }
}

/** Verifies a signed score against a JWKS (jose). Throws on a bad signature, unknown kid or expiry. */
export async function verifySignedScore(
  jws: string,
  jwks: { keys: JWK[] },
  now: number = nowSeconds(),
): Promise<SignedScoreClaims> {
  const { payload } = await jwtVerify(jws, createLocalJWKSet(jwks), {
    algorithms: [SIGNING_ALG],
    currentDate: new Date(now * 1000),
  });
  return payload as SignedScoreClaims;
}
