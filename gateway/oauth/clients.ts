/**
 * OAuth clients: registered ones (RFC 7591, table oauth_clients) and Client ID Metadata Documents (the client_id
 * is an https URL whose JSON document describes the client; fetched through the SSRF guard from the vetted address,
 * at most 16 KiB within 3 s, at most 2 fetches at once per client address and 64 per gateway, cached 5 minutes and
 * served stale up to an hour more while a refetch fails), and client authentication at the token endpoint (none,
 * client_secret_basic, client_secret_post). A registered client without an owner is kept only while it is used
 * (audit W-1): `touchClient` stamps its use, `deleteUnusedClients` deletes the rest.
 */
import { SCOPES } from "../../actors/agent/access.ts";
import { ipBucketKey } from "../../actors/agent/limits.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { timingSafeEqualStr } from "../../infra/crypto.ts";
import type { Sql } from "../../infra/db.ts";
import { fetchVetted, readBoundedJson, ResponseTooLargeError, ResponseUndecodableError } from "../../infra/outbound-http.ts";
import { assertPublicUrl, type Resolver, type VettedUrl } from "../../infra/ssrf.ts";
import type { Services } from "../services.ts";
import { OAuthError, REFRESH_TOKEN_TTL_SECONDS, sha256hex } from "./common.ts";

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
  /** A registered client's last stamped use (`touchClient`); null if never used. */
  lastUsedAt?: Date | null;
}

/** A document fetched and accepted is served from the cache this long without asking its host again. */
export const CIMD_TTL_MS = 5 * 60_000;
/**
 * Past its TTL, a document fetched and accepted before is still served for this long while a refetch cannot start
 * (the fetch slots are busy) or fails transiently (timeout, reset, DNS failure, 5xx, 408, 429): a client that works
 * keeps refreshing its tokens through its host's outage or an attack on our fetch slots, for a bounded time.
 */
export const CIMD_STALE_MS = 60 * 60_000;
/** After a transient failure, the stale document (or, with none, "unknown") stands this long before the next try. */
export const CIMD_RETRY_MS = 30_000;
export const CIMD_MAX_BYTES = 16 * 1024;
/**
 * One deadline over the whole fetch, the DNS lookup included (a 16 KiB document needs no more): at the deadline the
 * request is aborted and the slot freed. Only a DNS lookup can outlive it (it cannot be cancelled); Bun resolves with
 * c-ares on Linux, asynchronously, so an orphaned lookup holds a pending query, not a thread.
 */
export const CIMD_DEADLINE_MS = 3_000;
/**
 * Metadata documents being fetched at once by this gateway. Anyone can make us fetch a URL of their choosing
 * (GET /oauth/authorize needs no credentials), so the fetches they can hold open are bounded: at most
 * CIMD_MAX_IN_FLIGHT_PER_ADDRESS started for one client address (ipBucketKey: an IPv4 address, an IPv6 /64) and
 * CIMD_MAX_IN_FLIGHT in all. Past either, the request is refused at once (503 temporarily_unavailable, Retry-After)
 * rather than queued behind slow hosts, unless a stale document can answer it.
 */
export const CIMD_MAX_IN_FLIGHT = 64;
export const CIMD_MAX_IN_FLIGHT_PER_ADDRESS = 2;
export const CIMD_RETRY_AFTER_SECONDS = 5;
/** Documents kept: accepted ones and refused ones apart, so a flood of junk ids cannot evict the clients that work. */
const KNOWN_MAX = 5_000;
const UNKNOWN_MAX = 1_000;

/** Services.extras key of the cache's clock (ms since the epoch; tests move it past the TTL). Default Date.now. */
export const EXTRAS_CIMD_CLOCK = "oauth.cimd.clock";
/** Services.extras key of a DNS resolver for document hosts (tests inject one; default: the system's). */
export const EXTRAS_CIMD_RESOLVER = "oauth.cimd.resolve";

/** What one fetch of a document came to: a client, a definite refusal, or a failure that may pass. */
type Fetched = { kind: "document"; client: OAuthClient } | { kind: "refused" } | { kind: "failed" };

/** One gateway's documents (Services.extras): the cache, the fetches under way and the slots each address holds. */
class MetadataDocuments {
  /** Accepted documents by client_id: `at` when fetched, `retryAt` no refetch before (after a transient failure). */
  readonly known = new Map<string, { client: OAuthClient; at: number; retryAt: number }>();
  /** Unknown client_ids, until when. */
  readonly unknown = new Map<string, number>();
  /** Fetches under way, by client_id: concurrent requests for one document share one fetch (and one slot). */
  readonly inFlight = new Map<string, Promise<OAuthClient | null>>();
  /** Slots held per client address (ipBucketKey of the request that started the fetch). */
  readonly perAddress = new Map<string, number>();

  /** Records a fetch's outcome and gives the client to answer with. */
  settle(clientId: string, fetched: Fetched, now: number): OAuthClient | null {
    if (fetched.kind === "document") {
      this.unknown.delete(clientId);
      remember(this.known, clientId, { client: fetched.client, at: now, retryAt: 0 }, KNOWN_MAX);
      return fetched.client;
    }
    const known = this.known.get(clientId);
    if (fetched.kind === "failed" && known && now - known.at < CIMD_TTL_MS + CIMD_STALE_MS) {
      known.retryAt = now + CIMD_RETRY_MS;
      return known.client;
    }
    // refused by its host (or failed with no document to fall back on): unknown, a failure only briefly
    this.known.delete(clientId);
    remember(this.unknown, clientId, now + (fetched.kind === "refused" ? CIMD_TTL_MS : CIMD_RETRY_MS), UNKNOWN_MAX);
    return null;
  }

  take(address: string): void {
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
  }

  release(address: string): void {
    const held = (this.perAddress.get(address) ?? 1) - 1;
    if (held > 0) this.perAddress.set(address, held);
    else this.perAddress.delete(address);
  }
}

/** Sets `key` as the newest entry, dropping the oldest past `max`. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value!);
}

function documents(svc: Services): MetadataDocuments {
  let docs = svc.extras.get("oauth.cimd.documents") as MetadataDocuments | undefined;
  if (!docs) svc.extras.set("oauth.cimd.documents", (docs = new MetadataDocuments()));
  return docs;
}

function clock(svc: Services): number {
  return ((svc.extras.get(EXTRAS_CIMD_CLOCK) as (() => number) | undefined) ?? Date.now)();
}

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

/** Statuses that say the host is busy or broken right now, not that the document is gone. */
const TRANSIENT_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/** The document's client, or why there is none. Never throws; stops early once `controller` is aborted. */
async function fetchMetadataDocument(svc: Services, clientId: string, controller: AbortController): Promise<Fetched> {
  let vetted: VettedUrl;
  try {
    const resolve = svc.extras.get(EXTRAS_CIMD_RESOLVER) as Resolver | undefined;
    vetted = await assertPublicUrl(clientId, { allowPrivate: svc.config.ALLOW_PRIVATE_URLS, field: "client_id", resolve });
  } catch (err) {
    // a name that does not resolve now may resolve again (a DNS outage); an address we refuse to call stays refused
    return err instanceof ActorError && err.details?.reason === "unresolvable" ? { kind: "failed" } : { kind: "refused" };
  }
  if (vetted.url.hash || vetted.url.pathname === "/") return { kind: "refused" };
  if (controller.signal.aborted) return { kind: "failed" };
  let res: Response;
  try {
    res = await fetchVetted(vetted, { timeoutMs: CIMD_DEADLINE_MS, controller, headers: { accept: "application/json" } });
  } catch (err) {
    return err instanceof ResponseUndecodableError ? { kind: "refused" } : { kind: "failed" };
  }
  if (res.status !== 200) {
    controller.abort();
    return TRANSIENT_STATUS.has(res.status) ? { kind: "failed" } : { kind: "refused" };
  }
  let doc: Record<string, unknown> | null;
  try {
    // Over 16 KiB (declared or counted) the fetch is stopped there and the document refused: never read whole.
    doc = (await readBoundedJson(res, CIMD_MAX_BYTES, controller)) as Record<string, unknown> | null;
  } catch (err) {
    // the host answered, with too much, garbage or not JSON; a timeout or reset mid-body may pass
    return err instanceof ResponseTooLargeError || err instanceof ResponseUndecodableError || err instanceof SyntaxError ? { kind: "refused" } : { kind: "failed" };
  }
  const client = metadataClient(clientId, doc);
  return client ? { kind: "document", client } : { kind: "refused" };
}

/** The client a fetched document describes, or null if it is not an acceptable document for this client_id. */
function metadataClient(clientId: string, doc: Record<string, unknown> | null): OAuthClient | null {
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
}

/** fetchMetadataDocument under one deadline (CIMD_DEADLINE_MS), its DNS lookup included. */
async function fetchWithinDeadline(svc: Services, clientId: string): Promise<Fetched> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<Fetched>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new DOMException("the client metadata document took too long", "TimeoutError"));
      resolve({ kind: "failed" });
    }, CIMD_DEADLINE_MS);
  });
  try {
    return await Promise.race([fetchMetadataDocument(svc, clientId, controller), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A Client ID Metadata Document's client: from the cache while fresh, else fetched (one fetch per client_id at a
 * time, in the slots of `from`'s address); a stale document answers when the fetch cannot start or fails transiently.
 */
async function metadataDocumentClient(svc: Services, clientId: string, from: string): Promise<OAuthClient | null> {
  const docs = documents(svc);
  const now = clock(svc);
  const known = docs.known.get(clientId);
  if (known && now - known.at < CIMD_TTL_MS) return known.client;
  const stale = known && now - known.at < CIMD_TTL_MS + CIMD_STALE_MS ? known : undefined;
  if (stale && now < stale.retryAt) return stale.client;
  const unknownUntil = docs.unknown.get(clientId);
  if (!stale && unknownUntil !== undefined && now < unknownUntil) return null;
  const running = docs.inFlight.get(clientId);
  if (running) return running;
  const address = ipBucketKey(from);
  const perAddressFull = (docs.perAddress.get(address) ?? 0) >= CIMD_MAX_IN_FLIGHT_PER_ADDRESS;
  if (perAddressFull || docs.inFlight.size >= CIMD_MAX_IN_FLIGHT) {
    if (stale) return stale.client;
    // Not cached: the document itself may be fine, this gateway only will not fetch more right now. Not cached as
    // unknown either: asked again once a slot is free, it is fetched.
    throw new OAuthError(
      "temporarily_unavailable",
      perAddressFull
        ? `Too many client metadata documents are being fetched for your address right now (at most ${CIMD_MAX_IN_FLIGHT_PER_ADDRESS}); retry in a few seconds.`
        : `Too many client metadata documents are being fetched right now (at most ${CIMD_MAX_IN_FLIGHT}); retry in a few seconds.`,
      503,
      CIMD_RETRY_AFTER_SECONDS,
    );
  }
  docs.take(address);
  const fetching = fetchWithinDeadline(svc, clientId)
    .then((fetched) => docs.settle(clientId, fetched, clock(svc)))
    .finally(() => {
      docs.inFlight.delete(clientId);
      docs.release(address);
    });
  docs.inFlight.set(clientId, fetching);
  return fetching;
}

/**
 * Whether an operator blocked this metadata-document client_id (oauth_blocked_clients, review R2-3): it has no
 * oauth_clients row to mark deleted, so the block is its own row, keyed by the exact client_id URL.
 */
export async function isBlockedClient(sql: Sql, clientId: string): Promise<boolean> {
  const [row] = await sql`SELECT 1 FROM oauth_blocked_clients WHERE client_id = ${clientId}`;
  return row !== undefined;
}

/** The longest client_id there is (a metadata document's URL; a registered id is far shorter). */
export const CLIENT_ID_MAX_LENGTH = 2048;

/** Whether `clientId` could name a client at all: 1 to CLIENT_ID_MAX_LENGTH characters, no NUL (Postgres text refuses it). */
export function isPossibleClientId(clientId: string): boolean {
  return clientId.length > 0 && clientId.length <= CLIENT_ID_MAX_LENGTH && !clientId.includes("\0");
}

/**
 * A client by its client_id: a registered one (oauth_clients), or a Client ID Metadata Document's. `from` is the
 * requester's address, whose share of the document fetches a fetch started for it takes.
 */
export async function getClient(svc: Services, clientId: string, from: string): Promise<OAuthClient | null> {
  if (!clientId || clientId.length > CLIENT_ID_MAX_LENGTH) return null;
  if (isMetadataDocumentId(clientId)) {
    // an operator's block (manage.ts deleteClient) is read before the document is fetched: a blocked client is unknown
    if (await isBlockedClient(svc.sql, clientId)) return null;
    return metadataDocumentClient(svc, clientId, from);
  }
  const rows = await svc.sql<
    {
      client_id: string;
      secret_hash: string | null;
      client_name: string;
      redirect_uris: string[];
      grant_types: GrantType[];
      token_endpoint_auth_method: AuthMethod;
      scope: string;
      owner_user_id: string | null;
      last_used_at: Date | null;
    }[]
  >`SELECT client_id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope, owner_user_id, last_used_at
    FROM oauth_clients WHERE client_id = ${clientId} AND deleted_at IS NULL`;
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
    lastUsedAt: r.last_used_at,
  };
}

/** A client's use is stamped at most this often: one write per client per hour, not one per token request. */
export const CLIENT_TOUCH_EVERY_MS = 60 * 60_000;
/**
 * A client deleted through the API (manage.ts) keeps its row, marked `deleted_at`, this long: an MCP request with one
 * of its access tokens finds it deleted and is refused (revocation.ts). Past every access token's life (15 min), so
 * once the row is gone no live token names the client.
 */
export const DELETED_CLIENT_KEEP_MS = 24 * 60 * 60_000;
/** An ownerless client nobody ever authorized is deleted this long after its registration. */
export const NEVER_USED_CLIENT_TTL_MS = 24 * 60 * 60_000;
/**
 * An ownerless client unused this long is deleted: a refresh token lives 30 days, plus a day, so the hourly stamp
 * never lets a client go while a token it was given can still be refreshed.
 */
export const UNUSED_CLIENT_TTL_MS = REFRESH_TOKEN_TTL_SECONDS * 1000 + 24 * 60 * 60_000;

/**
 * Stamps a registered client's use (`last_used_at`), when its stamp is older than CLIENT_TOUCH_EVERY_MS (read with the
 * client: a fresh one costs nothing). Called only once a user has authorized the client (consent) or a token was
 * issued to it: a request anyone can make with a public client's id (a garbage code) must not keep junk clients
 * alive. Best effort: the caller has already issued what it issues, a failed stamp is logged.
 */
export async function touchClient(svc: Services, client: OAuthClient): Promise<void> {
  if (client.source !== "registered") return;
  if (client.lastUsedAt && Date.now() - client.lastUsedAt.getTime() < CLIENT_TOUCH_EVERY_MS) return;
  try {
    await svc.sql`UPDATE oauth_clients SET last_used_at = now()
                  WHERE client_id = ${client.clientId} AND (last_used_at IS NULL OR last_used_at < now() - ${CLIENT_TOUCH_EVERY_MS}::int8 * interval '1 millisecond')`;
  } catch (err) {
    svc.log.warn("could not stamp an OAuth client's use", { clientId: client.clientId, error: err as Error });
  }
}

/**
 * One batch of the sweep of registered clients (audit W-1: anyone may register, 20 an hour per address; this bounds
 * what stays): deletes at most `batch` clients without an owner that nobody authorized within
 * NEVER_USED_CLIENT_TTL_MS of their registration, or unused for UNUSED_CLIENT_TTL_MS, as of `nowMs`, and returns how
 * many it deleted. Clients registered with a user session are kept: their owner answers for them (until the owner or
 * an operator deletes one: the marked row goes DELETED_CLIENT_KEEP_MS after its deletion, audit X-1). A client being
 * stamped meanwhile is skipped (its row is locked) and looked at again next time. A rule of the retention job
 * (infra/retention.ts), which repeats it until a batch comes back short.
 */
export async function deleteUnusedClients(sql: Sql, nowMs: number, batch: number): Promise<number> {
  const r = await sql`
    DELETE FROM oauth_clients WHERE client_id IN (
      SELECT client_id FROM oauth_clients
      WHERE owner_user_id IS NULL
        AND ((last_used_at IS NULL AND created_at < ${new Date(nowMs - NEVER_USED_CLIENT_TTL_MS)})
             OR last_used_at < ${new Date(nowMs - UNUSED_CLIENT_TTL_MS)})
      LIMIT ${batch} FOR UPDATE SKIP LOCKED)`;
  if (r.count >= batch) return r.count;
  // deleted clients apart, each statement on its own partial index (one OR across both read the whole table)
  const d = await sql`
    DELETE FROM oauth_clients WHERE client_id IN (
      SELECT client_id FROM oauth_clients WHERE deleted_at < ${new Date(nowMs - DELETED_CLIENT_KEEP_MS)}
      LIMIT ${batch - r.count} FOR UPDATE SKIP LOCKED)`;
  return r.count + d.count;
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

/**
 * Authenticates the client of a token/revocation request with the method it registered; else invalid_client (a
 * request with two methods, Basic and a body client_secret, is invalid_request).
 * `from`: the requester's address (getClient). The method used must be the registered one (OAuth 2.1 §2.4, audit X-6):
 * a client registered for client_secret_basic that sends its secret in the body is refused, so the agent trust
 * signal a client_credentials token carries (grants.ts, `client_auth`) states the method actually used. The refusal
 * names the registered method only to a caller that presented the right secret.
 */
export async function authenticateClient(svc: Services, authorization: string | null, form: Record<string, string>, from: string): Promise<OAuthClient> {
  const basic = basicCredentials(authorization);
  const clientId = basic?.id ?? form.client_id;
  if (!clientId) throw new OAuthError("invalid_client", "client authentication is required (client_id)");
  if (basic && form.client_id && form.client_id !== basic.id) throw new OAuthError("invalid_request", "client_id in the body differs from the Basic credentials");
  // one authentication method per request (RFC 6749 §2.3, OAuth 2.1 §2.4): a secret in both places is ambiguous,
  // whether or not they agree (audit A-4)
  if (basic && form.client_secret !== undefined) {
    throw new OAuthError("invalid_request", "use one client authentication method: the Authorization: Basic header or client_secret in the body, not both");
  }
  const client = await getClient(svc, clientId, from);
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
  if (usedMethod !== client.authMethod) {
    throw new OAuthError(
      "invalid_client",
      `this client is registered for ${client.authMethod} (its token_endpoint_auth_method): send its secret ${client.authMethod === "client_secret_basic" ? "in the Authorization: Basic header" : "in the body (client_secret)"}, not ${usedMethod === "client_secret_basic" ? "in the Authorization header" : "in the body"}`,
    );
  }
  return client;
}
