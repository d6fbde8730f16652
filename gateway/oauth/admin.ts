/**
 * Operator routes over every account's OAuth clients (docs/access.md "Revoking OAuth credentials"; docs/operations.md
 * "Blocking an OAuth client"), with an operator's session, in the REST envelope:
 *  - GET    /api/v1/admin/oauth/clients                      the clients across accounts, paged: registered ones
 *                                                            (oauth_clients) and the metadata-document clients the
 *                                                            database knows (a user's consent, an operator's block);
 *                                                            never a secret or its hash
 *  - DELETE /api/v1/admin/oauth/blocked-clients/{client_id}  lifts an operator's block of a metadata-document client
 * Deleting or blocking stays DELETE /api/v1/oauth/clients/{client_id} (manage.ts), which an operator may call on any
 * client. Before these routes both needed SQL.
 */
import { Elysia, t, type Static } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { requireOperator, userAuth } from "../plugins/auth.ts";
import { NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import type { Services } from "../services.ts";
import { noBody } from "../rest/optional-body.ts";
import { isMetadataDocumentId } from "./clients.ts";

const Stamp = t.String({ format: "date-time" });

export const OAuthAdminClientOut = t.Object({
  clientId: t.String({ description: "mcpc_… for a registered client; the document's URL for a metadata-document client." }),
  kind: t.Union([t.Literal("registered"), t.Literal("metadata_document")]),
  clientName: t.Union([t.String(), t.Null()], { description: "The registered name; null for a metadata-document client (its name is in its document, not stored)." }),
  ownerEmail: t.Union([t.String(), t.Null()], {
    description: "The account that registered the client with a session (its client_credentials tokens act for it); null for a client registered without one, and for a metadata-document client.",
  }),
  grantTypes: t.Array(t.String(), { description: "A metadata-document client: authorization_code and refresh_token (a public client)." }),
  tokenEndpointAuthMethod: t.String({ description: "none, client_secret_basic or client_secret_post; none for a metadata-document client." }),
  scope: t.Union([t.String(), t.Null()], { description: "The scopes it may ask for; null for a metadata-document client (in its document)." }),
  redirectUris: t.Union([t.Array(t.String()), t.Null()], { description: "Null for a metadata-document client (in its document)." }),
  createdAt: Stamp,
  lastUsedAt: t.Union([Stamp, t.Null()], {
    description: "Registered: the last token issued or consent given, stamped at most hourly. Metadata-document: the last consent still on record. Null if none.",
  }),
  liveGrants: t.Integer({ minimum: 0, description: "Users' live grants (refresh-token families) to the client." }),
  blockedAt: t.Union([Stamp, t.Null()], { description: "When an operator blocked this metadata-document client; null if it is not blocked." }),
  blockedBy: t.Union([t.String(), t.Null()], { description: "The e-mail of the operator who blocked it (null if not blocked, or that account is gone)." }),
});

export const OAuthClientUnblocked = t.Object({
  clientId: t.String(),
  blockedAt: Stamp,
  unblockedAt: Stamp,
});

export type OAuthAdminClientView = Static<typeof OAuthAdminClientOut>;

const clientIdParam = (description: string) => t.String({ minLength: 1, maxLength: 2048, pattern: NO_NUL_PATTERN, description });

export const AdminClientsQuery = t.Object({
  owner: t.Optional(
    t.String({
      minLength: 3,
      maxLength: 320,
      pattern: NO_NUL_PATTERN,
      description: "Only the clients this account registered (its e-mail, any case); a metadata-document client has no owner. 404 not_found for an unknown e-mail.",
    }),
  ),
  client_id: t.Optional(clientIdParam("Only this client: a registered client_id (mcpc_…) or a metadata document's URL, exactly.")),
  kind: t.Optional(t.Union([t.Literal("registered"), t.Literal("metadata_document")])),
  blocked: t.Optional(t.Union([t.Literal("true"), t.Literal("false")], { description: "true: only blocked metadata-document clients; false: only clients not blocked." })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, description: "1 to 200, default 50." })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000 })),
});
export type AdminClientsFilter = Static<typeof AdminClientsQuery>;

/** The most metadata-document clients the listing walks one by one before aggregating their codes instead. */
export const WALKED_CLIENTS_MAX = 500;

type Row = {
  client_id: string;
  kind: "registered" | "metadata_document";
  client_name: string | null;
  owner_email: string | null;
  grant_types: string[] | null;
  token_endpoint_auth_method: string | null;
  scope: string | null;
  redirect_uris: string[] | null;
  created_at: Date;
  last_used_at: Date | null;
  blocked_at: Date | null;
  blocked_by: string | null;
  live_grants: number;
};

/**
 * One page of every account's OAuth clients, oldest first, and how many match. Registered clients are rows of
 * oauth_clients (deleted ones left out, as in their owner's list); a metadata-document client is listed when the
 * database knows it: an authorization code a user's consent left (kept while the grant it started lives, and a day
 * more: so every client holding a live grant), or an operator's block. Never a secret or its hash.
 */
export async function listClientsForOperator(svc: Services, filter: AdminClientsFilter): Promise<{ items: OAuthAdminClientView[]; total: number }> {
  const sql = svc.sql;
  let ownerId: string | null = null;
  if (filter.owner !== undefined) {
    const [u] = await sql<{ id: string }[]>`SELECT id FROM users WHERE lower(email) = ${filter.owner.trim().toLowerCase()}`;
    if (!u) throw fail("not_found", "No account with that e-mail.", { field: "owner" });
    ownerId = u.id;
  }
  const id = filter.client_id;
  const wantRegistered = filter.kind !== "metadata_document" && filter.blocked !== "true" && (id === undefined || !isMetadataDocumentId(id));
  const wantDocuments = filter.kind !== "registered" && ownerId === null && (id === undefined || isMetadataDocumentId(id));
  const registered = () => sql`
    SELECT c.client_id, 'registered' AS kind, c.client_name, u.email AS owner_email, c.grant_types, c.token_endpoint_auth_method,
           c.scope, c.redirect_uris, c.created_at, c.last_used_at, NULL::timestamptz AS blocked_at, NULL::text AS blocked_by
    FROM oauth_clients c LEFT JOIN users u ON u.id = c.owner_user_id
    WHERE ${wantRegistered ? sql`true` : sql`false`} AND c.deleted_at IS NULL
      ${ownerId !== null ? sql`AND c.owner_user_id = ${ownerId}` : sql``}
      ${id !== undefined ? sql`AND c.client_id = ${id}` : sql``}`;
  // A metadata-document client's first consent on record dates it. Its codes are walked one client at a time over
  // oauth_codes_document_client (migration 0094: the URL clients' codes by client and creation), so the cost grows
  // with the number of such clients, not with their codes (a client consented to by 100,000 users is one probe), and
  // registered clients' codes are never read. A probe costs what ~30 codes of an index-only aggregate do, so past
  // WALKED_CLIENTS_MAX clients (many clients, few consents each) the walk stops and the index is aggregated instead:
  // never every code of oauth_codes either way. The predicate repeats the index's, so the planner may use it.
  const isDocument = (c: string) => sql`(${sql(c)} LIKE 'https://%' OR ${sql(c)} LIKE 'http://%')`;
  const documents = () => sql`
    SELECT coalesce(d.client_id, b.client_id) AS client_id, 'metadata_document' AS kind, NULL AS client_name, NULL AS owner_email,
           ARRAY['authorization_code', 'refresh_token'] AS grant_types, 'none' AS token_endpoint_auth_method, NULL AS scope,
           NULL::text[] AS redirect_uris, least(d.first_at, b.blocked_at) AS created_at, NULL::timestamptz AS last_used_at,
           b.blocked_at, bu.email AS blocked_by
    FROM (WITH RECURSIVE firsts AS (
            (SELECT client_id, created_at AS first_at, 1 AS walked FROM oauth_codes
             WHERE ${wantDocuments ? sql`true` : sql`false`} AND ${isDocument("client_id")} ${id !== undefined ? sql`AND client_id = ${id}` : sql``}
             ORDER BY client_id, created_at LIMIT 1)
            UNION ALL
            SELECT n.client_id, n.first_at, f.walked + 1 FROM firsts f CROSS JOIN LATERAL (
              SELECT client_id, created_at AS first_at FROM oauth_codes
              WHERE ${isDocument("client_id")} AND client_id > f.client_id ${id !== undefined ? sql`AND client_id = ${id}` : sql``}
              ORDER BY client_id, created_at LIMIT 1) n
            WHERE f.walked < ${WALKED_CLIENTS_MAX})
          SELECT client_id, first_at FROM firsts WHERE (SELECT count(*) FROM firsts) < ${WALKED_CLIENTS_MAX}
          UNION ALL
          -- only when the walk stopped at its bound (a one-time filter: otherwise never run)
          SELECT client_id, min(created_at) FROM oauth_codes
          WHERE ${wantDocuments ? sql`true` : sql`false`} AND ${isDocument("client_id")} ${id !== undefined ? sql`AND client_id = ${id}` : sql``}
            AND (SELECT count(*) FROM firsts) >= ${WALKED_CLIENTS_MAX}
          GROUP BY client_id) d
    FULL JOIN (SELECT * FROM oauth_blocked_clients
               WHERE ${wantDocuments ? sql`true` : sql`false`} ${id !== undefined ? sql`AND client_id = ${id}` : sql``}) b ON b.client_id = d.client_id
    LEFT JOIN users bu ON bu.id = b.blocked_by
    WHERE ${filter.blocked === "true" ? sql`b.blocked_at IS NOT NULL` : filter.blocked === "false" ? sql`b.blocked_at IS NULL` : sql`true`}`;
  const limit = filter.limit ?? 50;
  const offset = filter.offset ?? 0;
  // the total rides on each row (one pass over what matches); only a page past the end counts apart. A
  // metadata-document client's last consent is read for the page's rows only (one probe each).
  const rows = await sql<(Row & { total: number })[]>`
    WITH listed AS (${registered()} UNION ALL ${documents()}),
         page AS (SELECT *, count(*) OVER ()::int AS total FROM listed ORDER BY created_at, client_id LIMIT ${limit} OFFSET ${offset})
    SELECT p.client_id, p.kind, p.client_name, p.owner_email, p.grant_types, p.token_endpoint_auth_method, p.scope, p.redirect_uris,
           p.created_at, p.blocked_at, p.blocked_by, p.total,
           CASE WHEN p.kind = 'registered' THEN p.last_used_at
                ELSE (SELECT c.created_at FROM oauth_codes c WHERE ${isDocument("c.client_id")} AND c.client_id = p.client_id
                      ORDER BY c.created_at DESC LIMIT 1) END AS last_used_at,
           (SELECT count(*)::int FROM oauth_refresh_tokens t
            WHERE t.client_id = p.client_id AND t.used_at IS NULL AND t.revoked_at IS NULL AND t.expires_at > now()) AS live_grants
    FROM page p ORDER BY p.created_at, p.client_id`;
  let total = rows[0]?.total;
  if (total === undefined) {
    const [count] = await sql<{ total: number }[]>`WITH listed AS (${registered()} UNION ALL ${documents()}) SELECT count(*)::int AS total FROM listed`;
    total = count?.total ?? 0;
  }
  return {
    total,
    items: rows.map((r) => ({
      clientId: r.client_id,
      kind: r.kind,
      clientName: r.client_name,
      ownerEmail: r.owner_email,
      grantTypes: r.grant_types ?? [],
      tokenEndpointAuthMethod: r.token_endpoint_auth_method ?? "none",
      scope: r.scope,
      redirectUris: r.redirect_uris,
      createdAt: r.created_at.toISOString(),
      lastUsedAt: r.last_used_at?.toISOString() ?? null,
      liveGrants: r.live_grants,
      blockedAt: r.blocked_at?.toISOString() ?? null,
      blockedBy: r.blocked_by,
    })),
  };
}

/**
 * Lifts an operator's block of a metadata-document client (manage.ts blockMetadataDocumentClient): its row in
 * oauth_blocked_clients goes, and from then on the consent page fetches its document again and the token endpoint
 * knows it. The grants revoked by the block stay revoked (users consent again). not_found when that client_id is not
 * blocked (a registered client, an unknown URL, a block already lifted): lifting twice changes nothing.
 */
export async function unblockClient(svc: Services, operatorId: string, clientId: string): Promise<Static<typeof OAuthClientUnblocked>> {
  const [row] = await svc.sql<{ blocked_at: Date; unblocked_at: Date }[]>`
    DELETE FROM oauth_blocked_clients WHERE client_id = ${clientId} RETURNING blocked_at, now() AS unblocked_at`;
  if (!row) throw fail("not_found", "This client is not blocked (only a metadata-document client's URL can be; a registered client is deleted, not blocked).");
  svc.log.info("OAuth metadata-document client unblocked", { clientId, by: operatorId });
  return { clientId, blockedAt: row.blocked_at.toISOString(), unblockedAt: row.unblocked_at.toISOString() };
}

export function oauthAdminRoutes(svc: Services) {
  return new Elysia({ name: "oauth-admin" })
    .use(userAuth(svc))
    .get(
      "/api/v1/admin/oauth/clients",
      async ({ user, query }) => {
        requireOperator(user);
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const page = await listClientsForOperator(svc, query);
        return ok(page.items, { total: page.total, limit, offset });
      },
      {
        query: AdminClientsQuery,
        response: { 200: SuccessEnvelope(t.Array(OAuthAdminClientOut)), ...errorResponses(400, 401, 403, 404, 429) },
        detail: {
          tags: ["admin"],
          summary: "List every account's OAuth clients (never a secret), paged",
          description:
            "Operators only. Registered clients (deleted ones left out) and the metadata-document clients the database knows (a user consented to one, or an operator blocked it), oldest first. Filters: owner (an account's e-mail: the clients it registered with a session; 404 not_found for an unknown e-mail), client_id (exact: a registered id or a document URL), kind, blocked. Paged with limit (1-200, default 50) and offset; meta carries total, limit and offset. To take a client out of service: DELETE /api/v1/oauth/clients/{client_id} (a document URL is blocked); to lift a block: DELETE /api/v1/admin/oauth/blocked-clients/{client_id}.",
          security: [{ bearer: [] }],
        },
      },
    )
    .delete(
      "/api/v1/admin/oauth/blocked-clients/:client_id",
      async ({ user, params }) => {
        requireOperator(user);
        return ok(await unblockClient(svc, user.id, params.client_id));
      },
      {
        ...noBody(),
        params: t.Object({ client_id: clientIdParam("The blocked metadata-document client's URL, percent-encoded.") }),
        response: { 200: SuccessEnvelope(OAuthClientUnblocked), ...errorResponses(400, 401, 403, 404, 429) },
        detail: {
          tags: ["admin"],
          summary: "Lift the block of a metadata-document OAuth client",
          description:
            "Operators only. The exact client_id URL is accepted again from now on: the consent page fetches its document and users may authorize it. The grants the block revoked stay revoked. 404 not_found when that client_id is not blocked (a second unblock included: it changes nothing).",
          security: [{ bearer: [] }],
        },
      },
    );
}
