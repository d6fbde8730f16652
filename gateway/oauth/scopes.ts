/** OAuth `scope` parameters: space-separated agent scopes (actors/agent/access.ts SCOPES), nothing else. */
import { DEFAULT_SCOPES, SCOPES, type Scope } from "../../actors/agent/access.ts";
import type { Services } from "../services.ts";
import { isMetadataDocumentId, type OAuthClient } from "./clients.ts";
import { OAuthError } from "./common.ts";

function parse(requested: string | undefined): string[] {
  const asked = (requested ?? "").split(" ").filter(Boolean);
  for (const s of asked) if (!(SCOPES as readonly string[]).includes(s)) throw new OAuthError("invalid_scope", `unknown scope "${s}"; allowed: ${SCOPES.join(" ")}`);
  return asked;
}

/**
 * The scopes granted for a request: the requested ones (all must be agent scopes the client may ask for), or,
 * when none are requested, the default agent scopes the client may ask for.
 */
export function grantScopes(requested: string | undefined, clientScopes: readonly string[]): string[] {
  const asked = parse(requested);
  if (asked.length === 0) {
    const fallback = DEFAULT_SCOPES.filter((s) => clientScopes.includes(s));
    if (!fallback.length) throw new OAuthError("invalid_scope", "no scope requested and the client has none of the default scopes");
    return fallback;
  }
  for (const s of asked) if (!clientScopes.includes(s)) throw new OAuthError("invalid_scope", `the client is not registered for scope "${s}"`);
  return SCOPES.filter((s) => asked.includes(s));
}

/**
 * The scopes of an authorization request, where the human consents to each one (audit A5 M1). A public client's
 * registered `scope` is advisory (RFC 7591 §2: scopes it "can use"; it is the default when none is requested): the
 * SDK registers with whatever the first challenge said, so holding it to that set made every later
 * `insufficient_scope` step-up a dead end. A confidential client's set binds: a signed-in owner registered it.
 */
export function authorizationScopes(requested: string | undefined, client: Pick<OAuthClient, "authMethod" | "scopes">): string[] {
  const advisory = client.authMethod === "none" && parse(requested).length > 0;
  return grantScopes(requested, advisory ? SCOPES : client.scopes);
}

/**
 * A refresh's `scope`: the granted scopes or fewer (RFC 6749 §6); a wider one needs the human again, through the
 * authorization endpoint (audit A5 L1: the refusal used to say "not registered", even for a client registered for all).
 */
export function narrowScopes(requested: string | undefined, granted: readonly string[]): string[] {
  const asked = parse(requested);
  if (asked.length === 0) return [...granted];
  const extra = asked.filter((s) => !granted.includes(s));
  if (extra.length) {
    throw new OAuthError("invalid_scope", `scope "${extra.join(" ")}" exceeds the scope granted to this refresh token (${granted.join(" ")}); ask for it at the authorization endpoint (a new consent), not by refreshing`);
  }
  return SCOPES.filter((s) => asked.includes(s));
}

/**
 * Scopes narrower than another that does the same job where both are accepted: `checkout:delegate` pays through the
 * protocol bridges and the ucp_* tools without the platform's own checkout, refunds and wallet (audit X-4).
 */
const NARROWER_FIRST: readonly Scope[] = ["checkout:delegate"];

/**
 * The one scope an MCP challenge asks for when a tool accepts any of `accepted` (review R2-6: least privilege). The
 * narrowest accepted scope (checkout:delegate for the ucp_* checkout tools), when the client can be granted it:
 *  - an anonymous caller (the 401 hint: the client is not known yet, and a client registering from the challenge
 *    registers what it says);
 *  - a public client (metadata document, or registered with token_endpoint_auth_method none: its registered scopes are
 *    advisory, authorizationScopes) or a confidential client registered for it.
 * Otherwise the tool's first accepted scope (checkout): a confidential client's registered set binds, so asking it for
 * a scope it was not registered for would end at consent with invalid_scope.
 */
export async function challengeScope(svc: Services, accepted: readonly Scope[], clientId?: string): Promise<Scope | undefined> {
  const narrow = NARROWER_FIRST.find((s) => accepted.includes(s));
  if (!narrow || accepted[0] === narrow) return accepted[0];
  if (clientId === undefined || isMetadataDocumentId(clientId)) return narrow;
  const [c] = await svc.sql<{ token_endpoint_auth_method: string; scope: string }[]>`
    SELECT token_endpoint_auth_method, scope FROM oauth_clients WHERE client_id = ${clientId} AND deleted_at IS NULL`;
  if (!c) return accepted[0];
  return c.token_endpoint_auth_method === "none" || c.scope.split(" ").includes(narrow) ? narrow : accepted[0];
}
