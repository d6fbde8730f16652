/**
 * OAuth 2.1 authorization server for the per-store MCP endpoints (docs/access.md, "OAuth 2.1 for MCP").
 * `oauthRoutes` is the gateway module (mounted in gateway/rest/index.ts); `verifyMcpAccess` is what the MCP
 * endpoint calls for every request.
 */
import { Elysia } from "elysia";
import type { Services } from "../services.ts";
import { oauthAdminRoutes } from "./admin.ts";
import { authorizeRoutes } from "./authorize.ts";
import { oauthManagementRoutes } from "./manage.ts";
import { registrationRoutes } from "./register.ts";
import { tokenRoutes } from "./token.ts";
import { oauthWellKnownRoutes } from "./well-known.ts";

export { verifyMcpAccess, mcpChallenge, requireMcpCredentials, type McpAccess, type VerifyMcpAccessInput } from "./access.ts";
export { mcpResource, resourceMetadataUrl, ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, CODE_TTL_SECONDS } from "./common.ts";

export function oauthRoutes(svc: Services) {
  return new Elysia({ name: "oauth" })
    .use(oauthWellKnownRoutes(svc))
    .use(registrationRoutes(svc))
    .use(authorizeRoutes(svc))
    .use(tokenRoutes(svc))
    // last: their user-session guards are scoped to the routes registered after them
    .use(oauthManagementRoutes(svc))
    .use(oauthAdminRoutes(svc));
}
