/**
 * Signed tokens for user sessions (`POST /auth/login`) and OAuth access tokens: EdDSA over Ed25519 (jose).
 *
 * Verification accepts exactly one algorithm, EdDSA. That allowlist is what refuses the classic forgeries:
 * `alg: none` and an HS256 token whose HMAC secret is our public key. Expiry is always required and an expired
 * token gets its own error (`token_expired`, so a client knows to refresh) distinct from any other failure
 * (`unauthorized`). Key material is handed over as JWK; where it is stored is the caller's decision (config,
 * database, KMS). Old public keys can be passed in for verification during a rotation.
 */
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  errors as joseErrors,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from "jose";
import { fail } from "../actors/runtime/errors.ts";

export const JWT_ALGORITHM = "EdDSA";
/** The only algorithms `verifyToken` accepts. */
export const ALLOWED_JWT_ALGORITHMS: readonly string[] = [JWT_ALGORITHM];

export interface JwtKeyPair {
  /** RFC 7638 thumbprint of the public key; goes into the `kid` header and the JWKS. */
  kid: string;
  /** Secret. Persist encrypted or in a secret store. */
  privateJwk: JWK;
  /** Publishable (`/.well-known/jwks.json`). */
  publicJwk: JWK;
}

export async function generateJwtKeyPair(): Promise<JwtKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(JWT_ALGORITHM, { crv: "Ed25519", extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const decorate = (jwk: JWK): JWK => ({ ...jwk, kid, alg: JWT_ALGORITHM, use: "sig" });
  return { kid, privateJwk: decorate(await exportJWK(privateKey)), publicJwk: decorate(publicJwk) };
}

export interface TokenServiceOptions {
  issuer: string;
  key: JwtKeyPair;
  /** Public keys of retired signing keys still accepted for verification (rotation overlap). */
  previousPublicKeys?: readonly JWK[];
  /** Leeway for clock skew on exp/nbf/iat, seconds. Default 0. */
  clockToleranceSec?: number;
  /** Clock in epoch ms; injected in tests. */
  now?: () => number;
}

export interface IssueTokenInput {
  sub: string;
  aud: string | string[];
  /** OAuth scopes; stored as one space-separated `scope` claim (RFC 8693/9068). */
  scope?: string | readonly string[];
  ttlSeconds: number;
  /** Additional claims; may not override the registered ones. */
  extra?: Record<string, unknown>;
  /** `typ` header: "JWT" (default) for sessions, "at+jwt" for OAuth access tokens (RFC 9068). */
  typ?: string;
}

export interface VerifyTokenOptions {
  audience: string | readonly string[];
  /** Require this `typ` header (e.g. "at+jwt"), so a session token cannot be replayed as an access token. */
  typ?: string;
}

export interface VerifiedToken {
  sub: string;
  aud: string[];
  scope: string[];
  iat: number;
  exp: number;
  jti: string | undefined;
  claims: JWTPayload;
}

export interface TokenService {
  issueToken(input: IssueTokenInput): Promise<string>;
  /** Throws `token_expired` for an expired but otherwise valid token, `unauthorized` for anything else. */
  verifyToken(token: string, opts: VerifyTokenOptions): Promise<VerifiedToken>;
  /** The JWKS to publish: current public key first, then retired ones. */
  publicJwks(): { keys: JWK[] };
}

const RESERVED_CLAIMS = new Set(["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "scope"]);

export async function createTokenService(opts: TokenServiceOptions): Promise<TokenService> {
  const clock = opts.now ?? Date.now;
  const privateKey = (await importJWK({ ...opts.key.privateJwk, alg: JWT_ALGORITHM }, JWT_ALGORITHM)) as CryptoKey;
  const publicKeys: JWK[] = [opts.key.publicJwk, ...(opts.previousPublicKeys ?? [])].map((k) => {
    // Only the public members go into the verification set, even if a caller passed a private JWK.
    const { d: _d, ...pub } = k;
    return { ...pub, alg: JWT_ALGORITHM, use: "sig" };
  });
  const jwks = createLocalJWKSet({ keys: publicKeys });

  return {
    async issueToken(input) {
      if (!(input.ttlSeconds > 0)) throw new Error("ttlSeconds must be positive");
      for (const claim of Object.keys(input.extra ?? {})) {
        if (RESERVED_CLAIMS.has(claim)) throw new Error(`extra claim "${claim}" would override a registered claim`);
      }
      const nowSec = Math.floor(clock() / 1000);
      const payload: JWTPayload = { ...(input.extra ?? {}) };
      if (input.scope !== undefined) {
        payload.scope = typeof input.scope === "string" ? input.scope : input.scope.join(" ");
      }
      return new SignJWT(payload)
        .setProtectedHeader({ alg: JWT_ALGORITHM, kid: opts.key.kid, typ: input.typ ?? "JWT" })
        .setIssuer(opts.issuer)
        .setSubject(input.sub)
        .setAudience(input.aud)
        .setIssuedAt(nowSec)
        .setExpirationTime(nowSec + Math.floor(input.ttlSeconds))
        .setJti(crypto.randomUUID())
        .sign(privateKey);
    },

    async verifyToken(token, vopts) {
      try {
        const { payload } = await jwtVerify(token, jwks, {
          algorithms: [...ALLOWED_JWT_ALGORITHMS],
          issuer: opts.issuer,
          audience: typeof vopts.audience === "string" ? vopts.audience : [...vopts.audience],
          requiredClaims: ["exp", "iat", "sub"],
          currentDate: new Date(clock()),
          clockTolerance: opts.clockToleranceSec ?? 0,
          ...(vopts.typ ? { typ: vopts.typ } : {}),
        });
        const scope = typeof payload.scope === "string" && payload.scope.length > 0 ? payload.scope.split(" ") : [];
        return {
          sub: payload.sub!,
          aud: Array.isArray(payload.aud) ? payload.aud : [payload.aud!],
          scope,
          iat: payload.iat!,
          exp: payload.exp!,
          jti: payload.jti,
          claims: payload,
        };
      } catch (err) {
        if (err instanceof joseErrors.JWTExpired) throw fail("token_expired", "the token has expired");
        const reason = err instanceof joseErrors.JOSEError ? err.code : "malformed";
        throw fail("unauthorized", "invalid token", { reason });
      }
    },

    publicJwks() {
      return { keys: publicKeys.map((k) => ({ ...k })) };
    },
  };
}
