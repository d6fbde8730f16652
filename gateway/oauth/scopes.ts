/** OAuth `scope` parameters: space-separated agent scopes (actors/agent/access.ts SCOPES), nothing else. */
import { DEFAULT_SCOPES, SCOPES } from "../../actors/agent/access.ts";
import type { OAuthClient } from "./clients.ts";
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
