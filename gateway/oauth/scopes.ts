/** OAuth `scope` parameters: space-separated agent scopes (actors/agent/access.ts SCOPES), nothing else. */
import { DEFAULT_SCOPES, SCOPES } from "../../actors/agent/access.ts";
import { OAuthError } from "./common.ts";

/**
 * The scopes granted for a request: the requested ones (all must be agent scopes the client may ask for), or,
 * when none are requested, the default agent scopes the client may ask for.
 */
export function grantScopes(requested: string | undefined, clientScopes: readonly string[]): string[] {
  const asked = (requested ?? "").split(" ").filter(Boolean);
  if (asked.length === 0) {
    const fallback = DEFAULT_SCOPES.filter((s) => clientScopes.includes(s));
    if (!fallback.length) throw new OAuthError("invalid_scope", "no scope requested and the client has none of the default scopes");
    return fallback;
  }
  for (const s of asked) {
    if (!(SCOPES as readonly string[]).includes(s)) throw new OAuthError("invalid_scope", `unknown scope "${s}"; allowed: ${SCOPES.join(" ")}`);
    if (!clientScopes.includes(s)) throw new OAuthError("invalid_scope", `the client is not registered for scope "${s}"`);
  }
  return SCOPES.filter((s) => asked.includes(s));
}
