/**
 * Discovery documents of the OAuth 2.1 authorization server (MCP authorization, revision 2025-11-25):
 * - authorization-server metadata (RFC 8414) at /.well-known/oauth-authorization-server;
 * - protected-resource metadata (RFC 9728) for each store's MCP endpoint at
 *   /.well-known/oauth-protected-resource/{slug}/mcp (and for its dedicated endpoints …/mcp/{discovery|customer|checkout},
 *   and for the older path /mcp/{slug} at /.well-known/oauth-protected-resource/mcp/{slug});
 * - the public keys that verify access tokens at /api/v1/oauth/jwks.
 */
import { Elysia, t } from "elysia";
import { SCOPES } from "../../actors/agent/access.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { tokenService } from "../identity.ts";
import type { Services } from "../services.ts";
import { findEligibleStore } from "../../actors/store/reads.ts";
import { issuer, MCP_SUB_ENDPOINTS, OAUTH_BASE, resourceOfRef, type McpResourceRef, type McpSubEndpoint } from "./common.ts";

export function authorizationServerMetadata(svc: Services) {
  const iss = issuer(svc);
  return {
    issuer: iss,
    authorization_endpoint: `${iss}${OAUTH_BASE}/authorize`,
    token_endpoint: `${iss}${OAUTH_BASE}/token`,
    registration_endpoint: `${iss}${OAUTH_BASE}/register`,
    revocation_endpoint: `${iss}${OAUTH_BASE}/revoke`,
    jwks_uri: `${iss}${OAUTH_BASE}/jwks`,
    scopes_supported: [...SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
    token_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
    revocation_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    service_documentation: `${iss}/api/docs`,
  };
}

/**
 * The metadata of a store's MCP resource, for the stores whose MCP endpoints serve: one that exists and is eligible
 * (audit Q-6: `isEligibleStore`, the rule the MCP gateway's `store` applies). A suspended, hidden or UNVERIFIED store's
 * endpoint is 404 store_not_found, so its metadata is too, as an unknown slug's: advertised, it sent clients through
 * an OAuth flow for an endpoint that never serves, and told an ineligible merchant from an unknown slug.
 */
async function protectedResource(svc: Services, ref: McpResourceRef) {
  const slug = ref.slug;
  if (!(await findEligibleStore(svc.sql, slug))) throw fail("store_not_found", `No store "${slug}".`);
  return {
    resource: resourceOfRef(svc, ref),
    authorization_servers: [issuer(svc)],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: `MCP endpoint of store ${slug}`,
    resource_documentation: `${issuer(svc)}/api/docs`,
  };
}

export function oauthWellKnownRoutes(svc: Services) {
  const json = (set: { headers: Record<string, string | number> }) => {
    set.headers["cache-control"] = "public, max-age=300";
  };
  return new Elysia({ name: "oauth-well-known" })
    .get(
      "/.well-known/oauth-authorization-server",
      ({ set }) => {
        json(set);
        return authorizationServerMetadata(svc);
      },
      { detail: { tags: ["oauth"], summary: "Authorization server metadata (RFC 8414)" } },
    )
    .get(
      "/.well-known/oauth-protected-resource/:slug/mcp",
      async ({ params, set }) => {
        const doc = await protectedResource(svc, { slug: params.slug });
        json(set);
        return doc;
      },
      {
        params: t.Object({ slug: t.String() }),
        detail: { tags: ["oauth"], summary: "Protected resource metadata of a store's MCP endpoint (RFC 9728)", responses: { 200: { description: "Metadata" }, 404: { description: "store_not_found" }, 429: { description: "rate_limit_exceeded" } } },
      },
    )
    .get(
      "/.well-known/oauth-protected-resource/:slug/mcp/:endpoint",
      async ({ params, set }) => {
        if (!(MCP_SUB_ENDPOINTS as readonly string[]).includes(params.endpoint)) throw fail("route_not_found", "No such MCP endpoint.");
        const doc = await protectedResource(svc, { slug: params.slug, sub: params.endpoint as McpSubEndpoint });
        json(set);
        return doc;
      },
      {
        params: t.Object({ slug: t.String(), endpoint: t.String() }),
        detail: { tags: ["oauth"], summary: "Protected resource metadata of a store's dedicated MCP endpoint (RFC 9728)", responses: { 200: { description: "Metadata" }, 404: { description: "store_not_found or route_not_found" }, 429: { description: "rate_limit_exceeded" } } },
      },
    )
    .get(
      // The older MCP path /mcp/{slug} is its own resource, {site_url}/mcp/{slug}: the SDK's discovery derives this
      // address from that path and accepts only metadata whose `resource` is the URL it called (RFC 9728 §3.3)
      "/.well-known/oauth-protected-resource/mcp/:slug",
      async ({ params, set }) => {
        const doc = await protectedResource(svc, { slug: params.slug, legacy: true });
        json(set);
        return doc;
      },
      {
        params: t.Object({ slug: t.String() }),
        detail: { tags: ["oauth"], summary: "Protected resource metadata of a store's MCP endpoint at the older path /mcp/{slug} (RFC 9728)", responses: { 200: { description: "Metadata" }, 404: { description: "store_not_found" }, 429: { description: "rate_limit_exceeded" } } },
      },
    )
    .get(
      `${OAUTH_BASE}/jwks`,
      async ({ set }) => {
        json(set);
        return (await tokenService(svc)).publicJwks();
      },
      { detail: { tags: ["oauth"], summary: "Public keys (JWKS) that verify access tokens" } },
    );
}
