/**
 * OAuth clients: registered ones (RFC 7591, table oauth_clients) and Client ID Metadata Documents (the client_id
 * is an https URL whose JSON document describes the client; fetched through the SSRF guard from the vetted address,
 * at most 16 KiB, at most CIMD_MAX_IN_FLIGHT fetches at once per gateway, cached 5 minutes), and client
 * authentication at the token endpoint (none, client_secret_basic, client_secret_post).
 */
import { fail } from "../../actors/runtime/errors.ts";
import { timingSafeEqualStr } from "../../infra/crypto.ts";
import { fetchVetted, readBoundedJson } from "../../infra/outbound-http.ts";
import { assertPublicUrl } from "../../infra/ssrf.ts";
import { SCOPES } from "../../actors/agent/access.ts";
import type { Services } from "../services.ts";
import { OAuthError, sha256hex } from "./common.ts";

export type AuthMethod = "none" | "client_secret_basic" | "client_secret_post";
export type GrantType = "authorization_code" | "refresh_token" | "client_credentials";

export interface OAuthClient {
  clientId: string;
  secretHash: string | null;
  name: string;
  redirectUris: string[];
  grantTypes: GrantType[];
  authMethod: AuthMethod;
  /** Scopes the client may ask for. */
  scopes: string[];
  ownerUserId: string | null;
  source: "registered" | "metadata-document";
}

const CIMD_TTL_MS = 5 * 60_000;
export const CIMD_MAX_BYTES = 16 * 1024;
const CIMD_TIMEOUT_MS = 5_000;
/**
 * Metadata documents being fetched at once by this gateway. Anyone can make us fetch a URL of their choosing
 * (GET /oauth/authorize needs no credentials), so the number of outbound fetches they can hold open is bounded
 * too; past it the request is refused at once (503 service_unavailable) rather than queued behind slow hosts.
 */
export const CIMD_MAX_IN_FLIGHT = 8;
const cimdCache = new Map<string, { at: number; client: OAuthClient | null }>();
/** Fetches under way, by client_id: concurrent requests for one document share one fetch (and one slot). */
const cimdInFlight = new Map<string, Promise<OAuthClient | null>>();

export function isMetadataDocumentId(clientId: string): boolean {
  return /^https?:\/\//.test(clientId);
}

/** OAuth 2.1 §8.4: https, http only on a loopback host (native apps), or a private-use scheme (reverse domain). */
export function isAcceptableRedirectUri(value: string): boolean {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return false;
  }
  if (u.hash || value.includes("#")) return false;
  if (u.protocol === "https:") return true;
  if (u.protocol === "http:") return ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname);
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(u.protocol) && !["javascript:", "data:", "file:"].includes(u.protocol);
}

async function fetchMetadataDocument(svc: Services, clientId: string): Promise<OAuthClient | null> {
  const vetted = await assertPublicUrl(clientId, { allowPrivate: svc.config.ALLOW_PRIVATE_URLS, field: "client_id" }).catch(() => null);
  if (!vetted || vetted.url.hash || vetted.url.pathname === "/") return null;
  try {
    const controller = new AbortController();
    const res = await fetchVetted(vetted, { timeoutMs: CIMD_TIMEOUT_MS, controller, headers: { accept: "application/json" } });
    if (res.status !== 200) {
      controller.abort();
      return null;
    }
    // Over 16 KiB (declared or counted) the fetch is stopped there and the document refused: never read whole.
    const doc = (await readBoundedJson(res, CIMD_MAX_BYTES, controller)) as Record<string, unknown> | null;
    if (!doc || typeof doc !== "object") return null;
    // The document must name itself, or anyone could point at someone else's document.
    if (doc.client_id !== clientId) return null;
    const redirects = Array.isArray(doc.redirect_uris) ? doc.redirect_uris.filter((x): x is string => typeof x === "string") : [];
    if (!redirects.length || !redirects.every(isAcceptableRedirectUri)) return null;
    const method = doc.token_endpoint_auth_method ?? "none";
    // A metadata document cannot carry a shared secret, so such clients are public.
    if (method !== "none") return null;
    const scopes = typeof doc.scope === "string" ? doc.scope.split(" ").filter((s) => (SCOPES as readonly string[]).includes(s)) : [...SCOPES];
    return {
      clientId,
      secretHash: null,
      name: typeof doc.client_name === "string" ? doc.client_name.slice(0, 200) : new URL(clientId).host,
      redirectUris: redirects,
      grantTypes: ["authorization_code", "refresh_token"],
      authMethod: "none",
      scopes,
      ownerUserId: null,
      source: "metadata-document",
    };
  } catch {
    return null;
  }
}

export async function getClient(svc: Services, clientId: string): Promise<OAuthClient | null> {
  if (!clientId || clientId.length > 2048) return null;
  if (isMetadataDocumentId(clientId)) {
    const hit = cimdCache.get(clientId);
    if (hit && Date.now() - hit.at < CIMD_TTL_MS) return hit.client;
    const running = cimdInFlight.get(clientId);
    if (running) return running;
    if (cimdInFlight.size >= CIMD_MAX_IN_FLIGHT) {
      // Not cached: the document itself may be fine, this gateway is only busy fetching others.
      throw fail("service_unavailable", "Too many client metadata documents are being fetched right now; retry in a few seconds.", {
        reason: "client_metadata_fetches_busy",
        limit: CIMD_MAX_IN_FLIGHT,
      });
    }
    const fetching = fetchMetadataDocument(svc, clientId)
      .then((client) => {
        cimdCache.set(clientId, { at: Date.now(), client });
        if (cimdCache.size > 1000) cimdCache.delete(cimdCache.keys().next().value!);
        return client;
      })
      .finally(() => cimdInFlight.delete(clientId));
    cimdInFlight.set(clientId, fetching);
    return fetching;
  }
  const rows = await svc.sql<
    { client_id: string; secret_hash: string | null; client_name: string; redirect_uris: string[]; grant_types: GrantType[]; token_endpoint_auth_method: AuthMethod; scope: string; owner_user_id: string | null }[]
  >`SELECT client_id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope, owner_user_id
    FROM oauth_clients WHERE client_id = ${clientId}`;
  const r = rows[0];
  if (!r) return null;
  return {
    clientId: r.client_id,
    secretHash: r.secret_hash,
    name: r.client_name,
    redirectUris: r.redirect_uris,
    grantTypes: r.grant_types,
    authMethod: r.token_endpoint_auth_method,
    scopes: r.scope.split(" ").filter(Boolean),
    ownerUserId: r.owner_user_id,
    source: "registered",
  };
}

function basicCredentials(authorization: string | null): { id: string; secret: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(authorization ?? "");
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) return null;
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before base64
    return { id: decodeURIComponent(decoded.slice(0, i).replace(/\+/g, " ")), secret: decodeURIComponent(decoded.slice(i + 1).replace(/\+/g, " ")) };
  } catch {
    return null;
  }
}

/** Authenticates the client of a token/revocation request with the method it registered; else invalid_client. */
export async function authenticateClient(svc: Services, authorization: string | null, form: Record<string, string>): Promise<OAuthClient> {
  const basic = basicCredentials(authorization);
  const clientId = basic?.id ?? form.client_id;
  if (!clientId) throw new OAuthError("invalid_client", "client authentication is required (client_id)");
  if (basic && form.client_id && form.client_id !== basic.id) throw new OAuthError("invalid_request", "client_id in the body differs from the Basic credentials");
  const client = await getClient(svc, clientId);
  // Still hash something when the client is unknown, so timing does not reveal registered ids.
  const presented = basic?.secret ?? form.client_secret ?? null;
  const presentedHash = presented !== null ? sha256hex(presented) : "";
  if (!client) throw new OAuthError("invalid_client", "unknown client or bad credentials");
  const usedMethod: AuthMethod = basic ? "client_secret_basic" : form.client_secret !== undefined ? "client_secret_post" : "none";
  if (client.authMethod === "none") {
    if (usedMethod !== "none") throw new OAuthError("invalid_client", "this public client has no secret");
    return client;
  }
  if (usedMethod === "none" || !client.secretHash || !timingSafeEqualStr(presentedHash, client.secretHash)) {
    throw new OAuthError("invalid_client", "unknown client or bad credentials");
  }
  return client;
}
