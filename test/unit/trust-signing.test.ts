import { describe, expect, test } from "bun:test";
import { createHash, createPublicKey, verify as nodeVerify } from "node:crypto";
import { generateKek } from "../../infra/crypto.ts";
import {
  DEFAULT_SIGNATURE_TTL_SECONDS,
  TrustKeySet,
  exportSigningKeySealed,
  importSigningKeySealed,
  verifySignedScore,
  type PublicJwk,
  type ScoreToSign,
} from "../../actors/trust/signing.ts";

const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z, epoch seconds
const score: ScoreToSign = { storeSlug: "demo-store", score: 87.5, scale: "0-100", engine: "v41", methodologyVersion: "4.1.0" };

/**
 * A verifier that shares no code with jose: parses the compact JWS by hand, finds the key by kid in the JWKS and
 * checks the Ed25519 signature with node:crypto. Returns the payload, or null when anything does not hold.
 */
function independentVerify(jws: string, jwks: { keys: PublicJwk[] }, nowSeconds: number): Record<string, unknown> | null {
  const parts = jws.split(".");
  if (parts.length !== 3) return null;
  let header: { alg?: string; kid?: string };
  let payload: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(parts[0], "base64url").toString("utf8"));
    payload = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (header.alg !== "EdDSA") return null;
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  if (!jwk || jwk.kty !== "OKP" || jwk.crv !== "Ed25519") return null;
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  const ok = nodeVerify(null, Buffer.from(`${parts[0]}.${parts[1]}`, "ascii"), key, Buffer.from(parts[2], "base64url"));
  if (!ok) return null;
  if (typeof payload.exp !== "number" || payload.exp <= nowSeconds) return null;
  return payload;
}

/** RFC 7638 thumbprint computed by hand. */
const thumbprint = (x: string): string =>
  createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest("base64url");

function flipChar(s: string, index: number): string {
  const c = s[index];
  return s.slice(0, index) + (c === "a" ? "b" : "a") + s.slice(index + 1);
}

describe("signed trust scores", () => {
  test("a signed score verifies against the JWKS with an independent node:crypto verifier", async () => {
    const ks = await TrustKeySet.create(T0);
    const jws = await ks.signScore(score, { now: T0 });
    const payload = independentVerify(jws, ks.jwks(T0), T0 + 60);
    expect(payload).not.toBeNull();
    expect(payload).toMatchObject({
      store_slug: "demo-store",
      score: 87.5,
      scale: "0-100",
      engine: "v41",
      methodology_version: "4.1.0",
      signed_at: "2026-01-01T00:00:00.000Z",
      exp: T0 + DEFAULT_SIGNATURE_TTL_SECONDS,
    });
  });

  test("the protected header says EdDSA and names the key by its JWK thumbprint", async () => {
    const ks = await TrustKeySet.create(T0);
    const jws = await ks.signScore(score, { now: T0 });
    const header = JSON.parse(Buffer.from(jws.split(".")[0], "base64url").toString());
    const [jwk] = ks.jwks(T0).keys;
    expect(header.alg).toBe("EdDSA");
    expect(header.kid).toBe(jwk.kid);
    expect(jwk.kid).toBe(thumbprint(jwk.x));
  });

  test("changing any one character of the payload or signature makes verification fail", async () => {
    const ks = await TrustKeySet.create(T0);
    const jws = await ks.signScore(score, { now: T0 });
    const jwks = ks.jwks(T0);
    const payloadStart = jws.indexOf(".") + 1;
    const sigStart = jws.lastIndexOf(".") + 1;
    for (const i of [payloadStart + 5, sigStart + 3, sigStart + 40]) {
      expect(independentVerify(flipChar(jws, i), jwks, T0 + 60)).toBeNull();
      await expect(verifySignedScore(flipChar(jws, i), jwks, T0 + 60)).rejects.toThrow();
    }
  });

  test("a raised score in the payload fails verification", async () => {
    const ks = await TrustKeySet.create(T0);
    const [h, p, sig] = (await ks.signScore(score, { now: T0 })).split(".");
    const forged = JSON.parse(Buffer.from(p, "base64url").toString());
    forged.score = 99;
    const jws = `${h}.${Buffer.from(JSON.stringify(forged)).toString("base64url")}.${sig}`;
    expect(independentVerify(jws, ks.jwks(T0), T0 + 60)).toBeNull();
  });

  test("the public JWKS contains no private key material", async () => {
    const ks = await TrustKeySet.create(T0);
    const jwks = ks.jwks(T0);
    expect(jwks.keys[0]).not.toHaveProperty("d");
    expect(Object.keys(jwks.keys[0]).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x"]);
  });

  test("jose accepts the signature too and rejects it after exp", async () => {
    const ks = await TrustKeySet.create(T0);
    const jws = await ks.signScore(score, { now: T0, ttlSeconds: 600 });
    await expect(verifySignedScore(jws, ks.jwks(T0), T0 + 10)).resolves.toMatchObject({ score: 87.5 });
    await expect(verifySignedScore(jws, ks.jwks(T0), T0 + 601)).rejects.toThrow();
  });

  test("a score outside its scale is not signed", async () => {
    const ks = await TrustKeySet.create(T0);
    await expect(ks.signScore({ ...score, score: 101 })).rejects.toThrow(RangeError);
    await expect(ks.signScore({ ...score, score: 1.2, scale: "0-1" })).rejects.toThrow(RangeError);
  });
});

describe("key rotation", () => {
  test("a retired key stays published and verifiable until its last signature expires, then is dropped", async () => {
    const ks = await TrustKeySet.create(T0);
    const oldKid = ks.activeKid;
    const oldJws = await ks.signScore(score, { now: T0, ttlSeconds: 3600 });

    const next = await ks.rotate(T0 + 100);
    expect(next.kid).not.toBe(oldKid);
    expect(ks.activeKid).toBe(next.kid);

    const during = ks.jwks(T0 + 200);
    expect(during.keys.map((k) => k.kid).sort()).toEqual([oldKid, next.kid].sort());
    expect(independentVerify(oldJws, during, T0 + 200)).not.toBeNull();

    const newJws = await ks.signScore(score, { now: T0 + 200 });
    const header = JSON.parse(Buffer.from(newJws.split(".")[0], "base64url").toString());
    expect(header.kid).toBe(next.kid);
    expect(independentVerify(newJws, during, T0 + 200)).not.toBeNull();

    // After the old key's last exp: unpublished, and pruned from the set.
    expect(ks.jwks(T0 + 3600).keys.map((k) => k.kid)).toEqual([next.kid]);
    expect(ks.prune(T0 + 3600)).toEqual([oldKid]);
    expect(ks.allKeys().map((k) => k.kid)).toEqual([next.kid]);
  });

  test("a retired key that never signed is dropped at once", async () => {
    const ks = await TrustKeySet.create(T0);
    const oldKid = ks.activeKid;
    await ks.rotate(T0 + 1);
    expect(ks.jwks(T0 + 1).keys.map((k) => k.kid)).not.toContain(oldKid);
  });

  test("the retention follows the latest signature the old key made", async () => {
    const ks = await TrustKeySet.create(T0);
    const oldKid = ks.activeKid;
    await ks.signScore(score, { now: T0, ttlSeconds: 100 });
    await ks.signScore(score, { now: T0, ttlSeconds: 5000 });
    await ks.rotate(T0 + 10);
    expect(ks.jwks(T0 + 4999).keys.map((k) => k.kid)).toContain(oldKid);
    expect(ks.jwks(T0 + 5000).keys.map((k) => k.kid)).not.toContain(oldKid);
  });
});

describe("sealed private keys", () => {
  test("a sealed key imports under the same KEK and still signs for its kid", async () => {
    const ks = await TrustKeySet.create(T0);
    await ks.signScore(score, { now: T0 });
    const kek = generateKek();
    const sealed = await exportSigningKeySealed(ks.active, kek);
    expect(sealed.startsWith("v1.")).toBe(true);
    expect(sealed).not.toContain(ks.active.publicJwk.x);

    const restored = await importSigningKeySealed(kek, sealed);
    expect(restored.kid).toBe(ks.activeKid);
    expect(restored.maxExp).toBe(ks.active.maxExp);
    const restoredSet = TrustKeySet.fromKeys([restored]);
    const jws = await restoredSet.signScore(score, { now: T0 });
    expect(independentVerify(jws, ks.jwks(T0), T0 + 1)).not.toBeNull();
  });

  test("a sealed key does not import under another KEK", async () => {
    const ks = await TrustKeySet.create(T0);
    const sealed = await exportSigningKeySealed(ks.active, generateKek());
    await expect(importSigningKeySealed(generateKek(), sealed)).rejects.toThrow();
  });
});
