/**
 * Taking OAuth credentials out of service (audit X-1; docs/access.md "Revoking OAuth credentials"), with a user
 * session (Bearer JWT), in the REST envelope:
 *  - GET    /api/v1/oauth/clients                       the clients you registered with a session
 *  - DELETE /api/v1/oauth/clients/{client_id}           delete one (yours; an operator: any registered client): its
 *                                                       secret mints nothing more, its grants are revoked and every
 *                                                       access token it was given is refused at once; an operator
 *                                                       blocks a metadata-document client (its URL) the same way
 *  - POST   /api/v1/oauth/clients/{client_id}/secret    a new secret for your confidential client, shown once; the old
 *                                                       one is refused at once, and so are client_credentials tokens
 *                                                       it minted
 *  - GET    /api/v1/oauth/grants                        the live grants (refresh-token families) you gave clients
 *  - DELETE /api/v1/oauth/grants/{id}                   revoke one: its refresh token and access tokens are refused
 * Someone else's client or grant is 404, as for agent keys (gateway/rest/agent-keys.ts). A deleted client's row is
 * marked and removed by the retention job a day later (clients.ts deleteUnusedClients). Each change is logged (info:
 * what, by whom; never a secret): there is no audit table for credentials, agent keys have none either.
 */
import { Elysia, t, type Static } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { userAuth, type UserPrincipal } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { noBody } from "../rest/optional-body.ts";
import { noStore, OAUTH_BASE, randomSecret, sha256hex } from "./common.ts";
import { isMetadataDocumentId } from "./clients.ts";
import { revokeFamily } from "./grants.ts";

const ClientId = t.String({
  minLength: 1,
  maxLength: 2048,
  description: "The client_id registration answered (mcpc_…), or a metadata-document client's URL (percent-encoded; operators only: blocks it).",
});
const Stamp = t.String({ format: "date-time" });

export const OAuthClientOut = t.Object({
  clientId: t.String(),
  clientName: t.String(),
  grantTypes: t.Array(t.String()),
  tokenEndpointAuthMethod: t.String({ description: "none, client_secret_basic or client_secret_post: the only method the token endpoint accepts from it." }),
  scope: t.String(),
  redirectUris: t.Array(t.String()),
  createdAt: Stamp,
  lastUsedAt: t.Union([Stamp, t.Null()], { description: "Last token issued or consent given, stamped at most hourly; null if never." }),
});

export const OAuthClientDeleted = t.Object({
  clientId: t.String(),
  deletedAt: Stamp,
  grantsRevoked: t.Integer({ description: "Users' grants (refresh-token families) of the client revoked with it." }),
});

export const OAuthClientSecret = t.Object({
  clientId: t.String(),
  clientSecret: t.String({ description: "The new secret (mcps_…), shown once. The previous one is refused from now on." }),
  clientSecretExpiresAt: t.Literal(0, { description: "0: the secret does not expire (RFC 7591)." }),
});

export const OAuthGrantOut = t.Object({
  id: t.String({ format: "uuid", description: "The grant (refresh-token family)." }),
  clientId: t.String(),
  clientName: t.Union([t.String(), t.Null()], { description: "The registered client's name; null for a client identified by its metadata document URL." }),
  scopes: t.Array(t.String()),
  resource: t.String({ description: "The store MCP endpoint the grant is for." }),
  refreshedAt: Stamp,
  expiresAt: t.String({ format: "date-time", description: "When the current refresh token expires (30 days after its issue, at most grantExpiresAt)." }),
  grantExpiresAt: t.Union([Stamp, t.Null()], { description: "The grant's absolute end (90 days after the consent); null for a grant from before it was recorded (set at its next refresh)." }),
});

export const OAuthGrantRevoked = t.Object({ id: t.String({ format: "uuid" }), revoked: t.Literal(true) });

type ClientRow = {
  client_id: string;
  client_name: string;
  grant_types: string[];
  token_endpoint_auth_method: string;
  scope: string;
  redirect_uris: string[];
  created_at: Date;
  last_used_at: Date | null;
};

export type OAuthClientView = Static<typeof OAuthClientOut>;
export type OAuthGrantView = Static<typeof OAuthGrantOut>;

/** The clients `userId` registered with a session, oldest first, deleted ones left out (never a secret). */
export async function clientsOfUser(svc: Services, userId: string): Promise<OAuthClientView[]> {
  const rows = await svc.sql<ClientRow[]>`
    SELECT client_id, client_name, grant_types, token_endpoint_auth_method, scope, redirect_uris, created_at, last_used_at
    FROM oauth_clients WHERE owner_user_id = ${userId} AND deleted_at IS NULL ORDER BY created_at, client_id`;
  return rows.map((r) => ({
    clientId: r.client_id,
    clientName: r.client_name,
    grantTypes: r.grant_types,
    tokenEndpointAuthMethod: r.token_endpoint_auth_method,
    scope: r.scope,
    redirectUris: r.redirect_uris,
    createdAt: r.created_at.toISOString(),
    lastUsedAt: r.last_used_at?.toISOString() ?? null,
  }));
}

/**
 * Deletes a registered client, `user`'s own or any for an operator (else not_found): marks its row `deleted_at` and
 * revokes each of its families' live refresh token, in one transaction. From then on its secret, refresh tokens and
 * access tokens are refused (revocation.ts).
 */
export async function deleteClient(svc: Services, user: UserPrincipal, clientId: string): Promise<Static<typeof OAuthClientDeleted>> {
  if (isMetadataDocumentId(clientId)) return blockMetadataDocumentClient(svc, user, clientId);
  const [c] = await svc.sql<{ owner_user_id: string | null }[]>`
    SELECT owner_user_id FROM oauth_clients WHERE client_id = ${clientId} AND deleted_at IS NULL`;
  if (!c || (c.owner_user_id !== user.id && user.role !== "operator")) throw fail("not_found", "No such OAuth client.");
  const done = await svc.sql.begin(async (tx) => {
    const [marked] = await tx<{ deleted_at: Date }[]>`
      UPDATE oauth_clients SET deleted_at = now() WHERE client_id = ${clientId} AND deleted_at IS NULL RETURNING deleted_at`;
    if (!marked) return null;
    // each family's live token (the others are spent): its grant then reads as revoked (revocation.ts)
    const revoked = await tx`
      UPDATE oauth_refresh_tokens SET revoked_at = now() WHERE client_id = ${clientId} AND used_at IS NULL AND revoked_at IS NULL`;
    return { deletedAt: marked.deleted_at, grantsRevoked: revoked.count };
  });
  // deleted meanwhile by another request: gone all the same
  if (!done) throw fail("not_found", "No such OAuth client.");
  svc.log.info("OAuth client deleted", { clientId, by: user.id, asOperator: c.owner_user_id !== user.id, grantsRevoked: done.grantsRevoked });
  return { clientId, deletedAt: done.deletedAt.toISOString(), grantsRevoked: done.grantsRevoked };
}

/**
 * An operator takes a Client ID Metadata Document client out of service (review R2-3): such a client has no
 * oauth_clients row, so its exact client_id URL is written to oauth_blocked_clients, and each of its users' live
 * refresh tokens is revoked, in one transaction. From then on the consent page and the token endpoint treat it as
 * unknown (clients.ts getClient) and its access tokens are refused (revocation.ts). Anyone else, and an id already
 * blocked, gets not_found (nobody owns such a client: only an operator may block it). An operator lifts a block with
 * DELETE /api/v1/admin/oauth/blocked-clients/{client_id} (admin.ts unblockClient).
 */
async function blockMetadataDocumentClient(svc: Services, user: UserPrincipal, clientId: string): Promise<Static<typeof OAuthClientDeleted>> {
  if (user.role !== "operator") throw fail("not_found", "No such OAuth client.");
  const done = await svc.sql.begin(async (tx) => {
    const [blocked] = await tx<{ blocked_at: Date }[]>`
      INSERT INTO oauth_blocked_clients (client_id, blocked_by) VALUES (${clientId}, ${user.id})
      ON CONFLICT (client_id) DO NOTHING RETURNING blocked_at`;
    if (!blocked) return null;
    const revoked = await tx`
      UPDATE oauth_refresh_tokens SET revoked_at = now() WHERE client_id = ${clientId} AND used_at IS NULL AND revoked_at IS NULL`;
    return { deletedAt: blocked.blocked_at, grantsRevoked: revoked.count };
  });
  if (!done) throw fail("not_found", "No such OAuth client (this metadata-document client is already blocked).");
  svc.log.info("OAuth metadata-document client blocked", { clientId, by: user.id, grantsRevoked: done.grantsRevoked });
  return { clientId, deletedAt: done.deletedAt.toISOString(), grantsRevoked: done.grantsRevoked };
}

/** The live grants `userId` gave (one per refresh-token family), oldest refresh first. */
export async function grantsOfUser(svc: Services, userId: string): Promise<OAuthGrantView[]> {
  const rows = await svc.sql<
    { family_id: string; client_id: string; client_name: string | null; scopes: string[]; resource: string; created_at: Date; expires_at: Date; family_expires_at: Date | null }[]
  >`
    SELECT t.family_id, t.client_id, c.client_name, t.scopes, t.resource, t.created_at, t.expires_at, t.family_expires_at
    FROM oauth_refresh_tokens t LEFT JOIN oauth_clients c ON c.client_id = t.client_id
    WHERE t.user_id = ${userId} AND t.used_at IS NULL AND t.revoked_at IS NULL AND t.expires_at > now() AND c.deleted_at IS NULL
    ORDER BY t.created_at, t.family_id`;
  return rows.map((r) => ({
    id: r.family_id,
    clientId: r.client_id,
    clientName: r.client_name,
    scopes: r.scopes,
    resource: r.resource,
    refreshedAt: r.created_at.toISOString(),
    expiresAt: r.expires_at.toISOString(),
    grantExpiresAt: r.family_expires_at?.toISOString() ?? null,
  }));
}

/** Revokes a grant `userId` gave (else not_found; a revoked one again is no error). */
export async function revokeGrant(svc: Services, userId: string, grantId: string): Promise<void> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(grantId)) throw fail("not_found", "No such grant.");
  const [g] = await svc.sql`SELECT 1 FROM oauth_refresh_tokens WHERE family_id = ${grantId} AND user_id = ${userId} LIMIT 1`;
  if (!g) throw fail("not_found", "No such grant.");
  await revokeFamily(svc, grantId);
  svc.log.info("OAuth grant revoked by its user", { grantId, by: userId });
}

export function oauthManagementRoutes(svc: Services) {
  return new Elysia({ name: "oauth-manage" })
    .use(userAuth(svc))
    .get(
      `${OAUTH_BASE}/clients`,
      async ({ user }) => ok(await clientsOfUser(svc, user.id)),
      {
        response: { 200: SuccessEnvelope(t.Array(OAuthClientOut)), ...errorResponses(401, 429) },
        detail: {
          tags: ["oauth"],
          summary: "List the OAuth clients you registered (never their secrets)",
          description: "The clients registered with your session (POST /api/v1/oauth/register with Authorization: Bearer), oldest first; deleted ones are not listed.",
          security: [{ bearer: [] }],
        },
      },
    )
    .delete(
      `${OAUTH_BASE}/clients/:client_id`,
      async ({ params, user }) => ok(await deleteClient(svc, user, params.client_id)),
      {
        ...noBody(),
        params: t.Object({ client_id: ClientId }),
        response: { 200: SuccessEnvelope(OAuthClientDeleted), ...errorResponses(400, 401, 404, 429) },
        detail: {
          tags: ["oauth"],
          summary: "Delete an OAuth client (refused at once everywhere)",
          description:
            "Yours, or any registered client for an operator; 404 not_found for another user's client, an unknown or already deleted one. An operator may also block a client identified by its metadata document URL (client_id percent-encoded; nobody else may, and one already blocked is 404): the exact URL is refused from then on (an operator lifts it with DELETE /api/v1/admin/oauth/blocked-clients/{client_id}). From then on the token endpoint answers 401 invalid_client for it, its users' grants are revoked, and every access token it was given is refused (401) on every MCP endpoint.",
          security: [{ bearer: [] }],
        },
      },
    )
    .post(
      `${OAUTH_BASE}/clients/:client_id/secret`,
      async ({ params, user, set }) => {
        noStore(set.headers as Record<string, string>);
        const [c] = await svc.sql<{ secret_hash: string | null }[]>`
          SELECT secret_hash FROM oauth_clients WHERE client_id = ${params.client_id} AND owner_user_id = ${user.id} AND deleted_at IS NULL`;
        if (!c) throw fail("not_found", "No such OAuth client.");
        if (c.secret_hash === null) throw fail("conflict", "This is a public client (token_endpoint_auth_method none): it has no secret to replace.");
        const secret = randomSecret("mcps_");
        const [rotated] = await svc.sql`
          UPDATE oauth_clients SET secret_hash = ${sha256hex(secret)}
          WHERE client_id = ${params.client_id} AND owner_user_id = ${user.id} AND deleted_at IS NULL RETURNING client_id`;
        if (!rotated) throw fail("not_found", "No such OAuth client.");
        svc.log.info("OAuth client secret replaced", { clientId: params.client_id, by: user.id });
        return ok({ clientId: params.client_id, clientSecret: secret, clientSecretExpiresAt: 0 as const });
      },
      {
        ...noBody(),
        params: t.Object({ client_id: ClientId }),
        response: { 200: SuccessEnvelope(OAuthClientSecret), ...errorResponses(400, 401, 404, 409, 429) },
        detail: {
          tags: ["oauth"],
          summary: "Replace your confidential OAuth client's secret (the new one is shown once)",
          description:
            "Only the client's owner (404 not_found for anyone else, operators included: the secret acts for its owner). The previous secret is refused at once (401 invalid_client), and client_credentials access tokens it minted are refused on every MCP endpoint; users' grants stand (their refreshes need the new secret). 409 conflict for a public client (no secret).",
          security: [{ bearer: [] }],
        },
      },
    )
    .get(
      `${OAUTH_BASE}/grants`,
      async ({ user }) => ok(await grantsOfUser(svc, user.id)),
      {
        response: { 200: SuccessEnvelope(t.Array(OAuthGrantOut)), ...errorResponses(401, 429) },
        detail: {
          tags: ["oauth"],
          summary: "List the grants you gave OAuth clients (authorization code flow)",
          description:
            "One row per live grant: a client you authorized on the consent page that holds a refresh token (one per authorization), oldest refresh first. A grant lasts at most 90 days from the consent, refreshed or not.",
          security: [{ bearer: [] }],
        },
      },
    )
    .delete(
      `${OAUTH_BASE}/grants/:id`,
      async ({ params, user }) => {
        await revokeGrant(svc, user.id, params.id);
        return ok({ id: params.id, revoked: true as const });
      },
      {
        ...noBody(),
        params: t.Object({ id: t.String({ format: "uuid" }) }),
        response: { 200: SuccessEnvelope(OAuthGrantRevoked), ...errorResponses(400, 401, 404, 429) },
        detail: {
          tags: ["oauth"],
          summary: "Revoke a grant you gave an OAuth client (refused at once everywhere)",
          description:
            "Its refresh token is refused (400 invalid_grant) and the access tokens issued under it are refused (401) on every MCP endpoint; the client must ask you again. Revoking a revoked grant answers the same. 404 not_found for another user's grant or an unknown id.",
          security: [{ bearer: [] }],
        },
      },
    );
}
