/**
 * `{site_url}/.well-known/*` documents. Each document is one entry of WELL_KNOWN_DOCUMENTS (path, builder,
 * cache lifetime); adding one (e.g. OAuth metadata) is one more entry.
 *
 * jwks.json publishes the trust-score signing keys only (active, plus retired ones until their last signature
 * expires), read from the shared database so any gateway serves the same set. The platform's JWT key (sessions,
 * OAuth access tokens, mandates, identity tokens) is not listed here: a third party checking "signed by the
 * platform's trust key" by signature and `kid` alone must not accept a login token as trust data (MCP audit N7).
 * OAuth clients find that key through the authorization server metadata's `jwks_uri` (/api/v1/oauth/jwks); the
 * platform verifies the rest in-process.
 */
import { Elysia } from "elysia";
import type { JWK } from "jose";
import { ensureTrustKey, publishedTrustJwks } from "../../actors/trust/keys.ts";
import { secretKey } from "../identity.ts";
import type { Services } from "../services.ts";

export interface WellKnownDocument {
  /** Path under /.well-known/ */
  path: string;
  /** Seconds a client may cache the document. */
  maxAge: number;
  build(svc: Services): Promise<unknown>;
}

async function jwks(svc: Services): Promise<{ keys: JWK[] }> {
  // A gateway-only process may answer before any actor host created the first trust key.
  if (!svc.extras.has("trustKeyEnsured")) {
    await ensureTrustKey(svc.sql, secretKey(svc), svc.clock.now());
    svc.extras.set("trustKeyEnsured", true);
  }
  return { keys: await publishedTrustJwks(svc.sql, svc.clock.now()) };
}

export const WELL_KNOWN_DOCUMENTS: WellKnownDocument[] = [
  // Short cache: a rotated-in key must reach verifiers before the first signature it makes.
  { path: "jwks.json", maxAge: 60, build: jwks },
];

export function wellKnownRoutes(svc: Services) {
  let app = new Elysia({ name: "well-known-routes" });
  for (const doc of WELL_KNOWN_DOCUMENTS) {
    app = app.get(
      `/.well-known/${doc.path}`,
      async ({ set }) => {
        set.headers["cache-control"] = `public, max-age=${doc.maxAge}`;
        return doc.build(svc);
      },
      { detail: { tags: ["discovery"], summary: `/.well-known/${doc.path}` } },
    ) as unknown as typeof app;
  }
  return app;
}
