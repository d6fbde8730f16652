import { describe, expect, spyOn, test } from "bun:test";
import { base64url, exportSPKI, importJWK, SignJWT, UnsecuredJWT } from "jose";
import { createTokenService, generateJwtKeyPair, type TokenService } from "../../infra/jwt.ts";
import { hashPassword, verifyLoginTimingSafe, verifyPassword } from "../../infra/passwords.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const ISSUER = "https://commerce.example";
const AUD = "agent-commerce-api";
const T0 = Date.UTC(2025, 2, 1, 12, 0, 0);

async function setup(now = () => T0) {
  const key = await generateJwtKeyPair();
  const service = await createTokenService({ issuer: ISSUER, key, now });
  return { key, service };
}

async function errorOf(p: Promise<unknown>): Promise<ActorError | null> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return null;
}
const codeOf = async (p: Promise<unknown>) => (await errorOf(p))?.code ?? "no error";

const encodeJson = (v: unknown) => base64url.encode(JSON.stringify(v));

describe("issuing and verifying tokens", () => {
  test("a token we issued verifies and carries its claims", async () => {
    const { service, key } = await setup();
    const token = await service.issueToken({ sub: "user-1", aud: AUD, scope: ["read", "write"], ttlSeconds: 900, extra: { role: "merchant" } });
    const header = JSON.parse(new TextDecoder().decode(base64url.decode(token.split(".")[0]!)));
    expect(header).toEqual({ alg: "EdDSA", kid: key.kid, typ: "JWT" });
    const v = await service.verifyToken(token, { audience: AUD });
    expect(v.sub).toBe("user-1");
    expect(v.aud).toEqual([AUD]);
    expect(v.scope).toEqual(["read", "write"]);
    expect(v.exp - v.iat).toBe(900);
    expect(v.iat).toBe(T0 / 1000);
    expect(v.claims.role).toBe("merchant");
    expect(v.claims.iss).toBe(ISSUER);
    expect(v.jti).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("an expired token is token_expired, not unauthorized", async () => {
    let now = T0;
    const { service } = await setup(() => now);
    const token = await service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60 });
    now = T0 + 59_000;
    await service.verifyToken(token, { audience: AUD });
    now = T0 + 60_000;
    expect(await codeOf(service.verifyToken(token, { audience: AUD }))).toBe("token_expired");
  });

  test("a token for another audience is refused", async () => {
    const { service } = await setup();
    const token = await service.issueToken({ sub: "u", aud: "dashboard", ttlSeconds: 60 });
    expect(await codeOf(service.verifyToken(token, { audience: AUD }))).toBe("unauthorized");
  });

  test("a token from another issuer with a key we do not hold is refused", async () => {
    const other = await setup();
    const { service } = await setup();
    const token = await other.service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60 });
    expect(await codeOf(service.verifyToken(token, { audience: AUD }))).toBe("unauthorized");
  });

  test("a token signed by a different Ed25519 key under our kid is refused", async () => {
    const { service, key } = await setup();
    const attacker = await generateJwtKeyPair();
    const priv = await importJWK(attacker.privateJwk, "EdDSA");
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: "EdDSA", kid: key.kid, typ: "JWT" })
      .setIssuer(ISSUER)
      .setSubject("admin")
      .setAudience(AUD)
      .setIssuedAt(T0 / 1000)
      .setExpirationTime(T0 / 1000 + 60)
      .sign(priv);
    expect(await codeOf(service.verifyToken(forged, { audience: AUD }))).toBe("unauthorized");
  });

  test("an alg none token is refused", async () => {
    const { service, key } = await setup();
    const claims = { iss: ISSUER, sub: "admin", aud: AUD, iat: T0 / 1000, exp: T0 / 1000 + 60 };
    const handmade = `${encodeJson({ alg: "none", typ: "JWT", kid: key.kid })}.${encodeJson(claims)}.`;
    expect(await codeOf(service.verifyToken(handmade, { audience: AUD }))).toBe("unauthorized");
    const viaJose = new UnsecuredJWT(claims).encode();
    const e = await errorOf(service.verifyToken(viaJose, { audience: AUD }));
    expect(e?.code).toBe("unauthorized");
    expect(e?.details?.reason).toBe("ERR_JOSE_ALG_NOT_ALLOWED");
  });

  test("an HS256 token signed with our public key as the HMAC secret is refused", async () => {
    const { service, key } = await setup();
    const publicKey = await importJWK(key.publicJwk, "EdDSA");
    const secrets: Uint8Array[] = [
      base64url.decode(key.publicJwk.x!), // raw 32 public key bytes
      new TextEncoder().encode(key.publicJwk.x!), // the base64url text
      new TextEncoder().encode(JSON.stringify(key.publicJwk)), // the JWK as published
      new TextEncoder().encode(await exportSPKI(publicKey as CryptoKey)), // PEM
    ];
    for (const secret of secrets) {
      const forged = await new SignJWT({ scope: "admin" })
        .setProtectedHeader({ alg: "HS256", kid: key.kid, typ: "JWT" })
        .setIssuer(ISSUER)
        .setSubject("admin")
        .setAudience(AUD)
        .setIssuedAt(T0 / 1000)
        .setExpirationTime(T0 / 1000 + 60)
        .sign(secret);
      const e = await errorOf(service.verifyToken(forged, { audience: AUD }));
      expect(e?.code).toBe("unauthorized");
      expect(e?.details?.reason).toBe("ERR_JOSE_ALG_NOT_ALLOWED");
    }
  });

  test("a token whose payload was altered after signing is refused", async () => {
    const { service } = await setup();
    const token = await service.issueToken({ sub: "user-1", aud: AUD, ttlSeconds: 60 });
    const [h, p, s] = token.split(".");
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(p!)));
    const tampered = `${h}.${encodeJson({ ...claims, sub: "admin" })}.${s}`;
    expect(await codeOf(service.verifyToken(tampered, { audience: AUD }))).toBe("unauthorized");
  });

  test("garbage is unauthorized", async () => {
    const { service } = await setup();
    expect(await codeOf(service.verifyToken("not.a.jwt", { audience: AUD }))).toBe("unauthorized");
    expect(await codeOf(service.verifyToken("", { audience: AUD }))).toBe("unauthorized");
  });

  test("a session token is refused where an OAuth access token (typ at+jwt) is required", async () => {
    const { service } = await setup();
    const session = await service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60 });
    const access = await service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60, typ: "at+jwt" });
    expect(await codeOf(service.verifyToken(session, { audience: AUD, typ: "at+jwt" }))).toBe("unauthorized");
    expect((await service.verifyToken(access, { audience: AUD, typ: "at+jwt" })).sub).toBe("u");
  });

  test("tokens of a retired key still verify during rotation when its public key is passed", async () => {
    const old = await setup();
    const token = await old.service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60 });
    const fresh = await generateJwtKeyPair();
    const rotated = await createTokenService({ issuer: ISSUER, key: fresh, previousPublicKeys: [old.key.publicJwk], now: () => T0 });
    expect((await rotated.verifyToken(token, { audience: AUD })).sub).toBe("u");
    expect(rotated.publicJwks().keys.map((k) => k.kid)).toEqual([fresh.kid, old.key.kid]);
  });

  test("keys persist as JWK: a service rebuilt from the stored JWK verifies earlier tokens", async () => {
    const { service, key } = await setup();
    const token = await service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60 });
    const stored = JSON.parse(JSON.stringify(key));
    const rebuilt: TokenService = await createTokenService({ issuer: ISSUER, key: stored, now: () => T0 });
    expect((await rebuilt.verifyToken(token, { audience: AUD })).sub).toBe("u");
  });

  test("the published JWKS holds no private key material", async () => {
    const { service } = await setup();
    for (const k of service.publicJwks().keys) {
      expect(k.d).toBeUndefined();
      expect(k.alg).toBe("EdDSA");
    }
  });

  test("extra claims cannot override registered ones", async () => {
    const { service } = await setup();
    await expect(service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60, extra: { sub: "admin" } })).rejects.toThrow();
    await expect(service.issueToken({ sub: "u", aud: AUD, ttlSeconds: 60, extra: { exp: 9e9 } })).rejects.toThrow();
  });
});

describe("passwords", () => {
  test("a password hashes to argon2id and verifies; a wrong one does not", async () => {
    const hash = await hashPassword("correct horse battery staple");
    expect(hash.startsWith("$argon2id$")).toBe(true);
    expect(await verifyPassword("correct horse battery staple", hash)).toBe(true);
    expect(await verifyPassword("correct horse battery stapler", hash)).toBe(false);
  });

  test("a malformed stored hash is a failed login", async () => {
    expect(await verifyPassword("x", "not-a-hash")).toBe(false);
  });

  test("a login for an unknown user still spends an argon2id verification and fails", async () => {
    const spy = spyOn(Bun.password, "verify");
    try {
      expect(await verifyLoginTimingSafe(null, "whatever")).toBe(false);
      expect(spy).toHaveBeenCalledTimes(1);
      const hash = await hashPassword("s3cret-pass");
      expect(await verifyLoginTimingSafe(hash, "s3cret-pass")).toBe(true);
      expect(await verifyLoginTimingSafe(hash, "wrong")).toBe(false);
      expect(spy).toHaveBeenCalledTimes(3);
    } finally {
      spy.mockRestore();
    }
  });

  test("an empty or oversized password never logs in", async () => {
    const hash = await hashPassword("p");
    expect(await verifyLoginTimingSafe(hash, "")).toBe(false);
    expect(await verifyLoginTimingSafe(hash, "p".repeat(5000))).toBe(false);
  });
});
