/**
 * Identity services shared by the auth plugin and the account routes: the JWT token service (keys shared
 * through Postgres, sealed) and the agent-key pepper. Created lazily once per process.
 */
import { createTokenService, type TokenService } from "../infra/jwt.ts";
import { agentKeyPepper, loadJwtKeys } from "../infra/secrets.ts";
import type { Services } from "./services.ts";

export const SESSION_AUDIENCE = "acs-api";
export const SESSION_TTL_SECONDS = 12 * 60 * 60;

export function secretKey(svc: Services): Uint8Array {
  const k = svc.extras.get("secretKey") as Uint8Array | undefined;
  if (!k) throw new Error("secretKey missing from services");
  return k;
}

export function pepper(svc: Services): Buffer {
  let p = svc.extras.get("agentKeyPepper") as Buffer | undefined;
  if (!p) svc.extras.set("agentKeyPepper", (p = agentKeyPepper(secretKey(svc))));
  return p;
}

export function tokenService(svc: Services): Promise<TokenService> {
  let t = svc.extras.get("tokenService") as Promise<TokenService> | undefined;
  if (!t) {
    t = loadJwtKeys(svc.sql, secretKey(svc)).then(({ active, previous }) =>
      createTokenService({ issuer: svc.siteUrl, key: active, previousPublicKeys: previous, now: () => svc.clock.now() }),
    );
    t.catch(() => svc.extras.delete("tokenService"));
    svc.extras.set("tokenService", t);
  }
  return t;
}
