/**
 * The per-store MCP endpoints, mounted in Elysia:
 *   POST|GET|DELETE {site_url}/{slug}/mcp                       every tool the store enables
 *   …/{slug}/mcp/discovery | /customer | /checkout               dedicated buckets (spec Limits §3)
 *   …/mcp/{slug}                                                 the older path, same as /{slug}/mcp
 *
 * Two ways through, both protocol-correct (docs/decisions.md, "MCP: fast path beside the SDK transport"):
 *
 * 1. SDK path. `initialize` creates a session: one low-level SDK `Server` + `WebStandardStreamableHTTPServerTransport`
 *    (stateful, SSE responses) per session, never per request. Every message of a session that is not a fast-path
 *    call goes to its transport: notifications, GET (server stream), DELETE, the client's answers to
 *    `elicitation/create`, and write-tool calls (which may need to ask the human on the call's SSE stream).
 *    Sessions are recorded in the session directory (session-directory.ts: a JetStream KV bucket with NATS, else
 *    memory), so any gateway of the deployment serves them: one that holds no copy of a session answers its
 *    fast-path calls from the directory entry and adopts it (`adopt`) for a message that needs the SDK; a client's
 *    answer to a question asked on another gateway is forwarded there (`routeAnswer`), and its cancel of a call
 *    running on another gateway reaches it there (`routeCancel`).
 * 2. Fast path. A single JSON-RPC request `tools/call` (read-only tool, or any tool without a session),
 *    `tools/list` or `ping`, from a client that accepts JSON, is answered here as one `application/json`
 *    JSON-RPC response, from the shared pre-built tool table (dispatch.ts). Sessions stay correct: the session id
 *    must exist and belong to this store/endpoint, and the protocol-version header must be one the SDK supports.
 *
 * Admission (auth + the spec's rate layers) happens per `tools/call` before either path, so a 429/401 is an HTTP
 * status with headers. `initialize` is counted in the global layer only (per principal with a credential, else per
 * address: `admitInitialize`); every other message (tools/list, ping, notifications, GET, DELETE…) is never
 * counted, but its answer still carries X-RateLimit-* of the caller's buckets as they stand (`handle`).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode as RpcErrorCode,
  LATEST_PROTOCOL_VERSION,
  ListToolsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { Elysia } from "elysia";
import { decodeJwt } from "jose";
import { DEFAULT_SCOPES, type Scope } from "../../actors/agent/access.ts";
import { bucketsFor, ipBucketKey, type BucketDescriptor, type Surface } from "../../actors/agent/limits.ts";
import { ActorError, ERROR_TABLE, fail, type ErrorCode } from "../../actors/runtime/errors.ts";
import { findEligibleStore } from "../../actors/store/reads.ts";
import type { StoreRecord } from "../../actors/store/schemas.ts";
import { isDatabaseUnavailable } from "../../infra/db.ts";
import { log } from "../../infra/log.ts";
import { errorBody } from "../envelope.ts";
import { mcpChallenge, oauthBuckets, verifyMcpAccess, type CredentialLapse, type CredentialWatch, type McpAccess } from "../oauth/access.ts";
import { challengeScope } from "../oauth/scopes.ts";
import { legacyMcpResource, mcpResource, mcpResourceRefOf, type McpResourceRef } from "../oauth/common.ts";
import { admitAnonymous, admitOthers, clientIp, peekBuckets, setRateHeaders, setStaticRateHeaders } from "../plugins/auth.ts";
import { DEFAULT_BODY_LIMIT } from "../plugins/body-limit.ts";
import { isObjectRecord } from "../plugins/json-body.ts";
import { breachMessage, exceedsJsonDepth, jsonBoundBreach, MAX_JSON_ARRAY_ITEMS, MAX_JSON_DEPTH, maxJsonValuesFor, tooDeepMessage } from "../plugins/json-depth.ts";
import { registerOwnLayer } from "../plugins/rate-limit.ts";
import type { Services } from "../services.ts";
import { cannotAsk, CONFIRM_PROGRESS_EVERY_MS, elicitingConfirmer, type Confirmer } from "./confirm.ts";
import { argumentError, buildToolTable, runTool, type CompiledTool, type ToolTable } from "./dispatch.ts";
import { errorResult, resultFromThrown, serialisedStructuredContent, type ToolCallResult } from "./errors.ts";
import { CUSTOMER_HEADER, customerLimitId, customerTokenRoutes, verifyCustomerToken } from "./identity.ts";
import type { Caller, Customer, Endpoint, ToolContext } from "./registry.ts";
import { SESSION_DIRECTORY, SESSION_IDLE_MS, type ClientInit, type Held, type SessionDirectory, type SessionRecord } from "./session-directory.ts";
import { ALL_TOOLS } from "./tools/index.ts";
import { isStoreSlug, STORE_SLUG_PART } from "../../actors/store/slug.ts";

export const DEMO_STORE = "demo-store";
export const SERVER_INFO = { name: "agent-commerce-service", version: "1.2.0" };
/** Local SDK copies of sessions this gateway holds at most (opened here or adopted). */
const MAX_SESSIONS = 10_000;
/**
 * Sessions one client address (IPv6: its /64) may open on one gateway, and, apart, copies of sessions opened
 * elsewhere it may have adopted there. At the cap its own least recently used one is closed, never another client's:
 * one address can no longer evict everyone by looping `initialize` (audit M3). An opened session closed so ends
 * everywhere; an adopted copy is dropped here only (review RH, finding 2: the session stays in the directory, in use
 * on the gateway that opened it, and is adopted again when it needs this gateway's SDK copy).
 */
export const MAX_SESSIONS_PER_ADDRESS = 100;
/** The most bytes a client's answer to a server request (`elicitation/create`: an action and a few fields) may have. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/**
 * The longest client request id (string) a cancel is broadcast to the other gateways for: ids are a counter or a UUID
 * in practice, and every gateway receives a broadcast, so a cancel naming a near-1 MiB id is not sent to them all.
 */
const MAX_BROADCAST_ID = 1024;
/** A tools/call argument may nest this deep: with the message's own three levels the body stays within the bound. */
export const MAX_ARGUMENT_DEPTH = MAX_JSON_DEPTH - 3;
const STORE_CACHE_MS = 1_000;
/** close(): how long sessions' running tool calls get to answer before their streams are ended. */
const CLOSE_GRACE_MS = 2_000;
/**
 * A GET event stream opened with a credential (an OAuth access token or an agent key) re-checks it this often: the
 * SDK's SSE keep-alive period (DEFAULT_SSE_KEEP_ALIVE_MS), so a revoked credential's stream ends within one keep-alive
 * tick of the revocation. Its expiry ends it at that instant, by a timer of its own.
 */
export const STREAM_RECHECK_MS = 15_000;
/** The global body bounds (plugins/json-depth.ts) for an MCP message: its routes have the default body limit. */
const MCP_BODY_BOUNDS = { maxDepth: MAX_JSON_DEPTH, maxArrayItems: MAX_JSON_ARRAY_ITEMS, maxValues: maxJsonValuesFor(DEFAULT_BODY_LIMIT) };

type Headers = Record<string, string | number>;
/** Elysia's `set` for this request: response headers (rate, request id, transparency…) and status. */
interface Out {
  headers: Headers;
  status?: number | string;
}

/** What admission resolved for one tools/call; handed to the SDK path through `authInfo.extra`. */
export interface CallPrincipal {
  caller: Caller | null;
  customer: Customer | null;
  customerError: ToolContext["customerError"];
}

/**
 * This gateway's SDK copy of a session: the `Server` + transport, for the messages that need them. Opened here by
 * `initialize`, or adopted from the session directory (`adopt`) when a session opened elsewhere first needs one.
 */
interface Local {
  id: string;
  /** Which of this gateway's copies (`copies`): the middle part of the ids of the requests it sends (`tagIds`). */
  copy: number;
  server: Server;
  transport: WebStandardStreamableHTTPServerTransport;
  lastSeen: number;
  /** ipBucketKey of the address that opened the session (the per-address cap counts local copies per address). */
  owner: string;
  /** Opened here by `initialize` (true) or adopted (false): only the first is ended everywhere at a cap. */
  opened: boolean;
  /** The client's request ids of this copy's tools/call handlers still running: what a cancel can act on. */
  running: ReadonlySet<RequestId>;
}

/**
 * A session as one request sees it: its directory entry (session-directory.ts; slug, endpoint, tool set, binding,
 * the client's initialize) as read for this request, and this gateway's SDK copy if it holds one. The binding is the
 * entry's `principal`: the principal that opened the session, or, for one opened without a credential, the first
 * that used it with one from the address that opened it (a client that signs in after a 401 keeps its session).
 * Null while no credential was seen; meanwhile only its `owner` address may use it. Any other caller is told the
 * session does not exist (`boundTo`).
 */
interface Session {
  held: Held;
  local?: Local;
}

interface JsonRpcRequest {
  jsonrpc: "2.0";
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
}

/** Errors answered at the HTTP level (before any tool runs). */
class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    /**
     * Who the refused credential proved to be, when it authenticated and only this endpoint's rule refused it (an API
     * key or user-delegated token on a real merchant's checkout endpoint, a token for another endpoint): in a session
     * bound to that same principal the 401 is the caller's own answer, not a leak (`hiddenFrom`). Never sent.
     */
    readonly principal?: string,
  ) {
    super(message);
  }
}

const JSON_HEADERS = { "content-type": "application/json" };

function surfaceOf(endpoint: Endpoint, slug: string, credentialed: boolean): Surface {
  // Keyless demo traffic is the demo bucket (20/min per IP) on every endpoint of the demo store: its discovery
  // variant's 1000/min would otherwise sidestep it (audit N3; docs/decisions.md). Credentialed callers get the
  // endpoint's own bucket, as at any store.
  if (slug === DEMO_STORE && !credentialed) return "demo-mcp";
  switch (endpoint) {
    case "discovery":
      return "mcp-discovery";
    case "customer":
      return "mcp-customer";
    case "checkout":
      return "mcp-checkout";
    default:
      return "mcp";
  }
}

function rpcError(id: JsonRpcRequest["id"], code: number, message: string, data?: unknown): string {
  return JSON.stringify({ jsonrpc: "2.0", id: id ?? null, error: data === undefined ? { code, message } : { code, message, data } });
}

function acceptsJson(request: Request): boolean {
  const accept = request.headers.get("accept");
  return !accept || accept.includes("application/json") || accept.includes("*/*");
}

/** How long the headers of an answer to a fault may wait for the address's buckets: best effort, never a deadline. */
const PEEK_AFTER_FAULT_MS = 1_000;

/** The fault is that no actor host answered: peeking the buckets would ask the same absent hosts. */
function actorsDown(err: unknown): boolean {
  return err instanceof ActorError && (err.code === "actor_unavailable" || err.code === "service_unavailable");
}

export class McpGateway {
  readonly table: ToolTable;
  /** This gateway's SDK copies of sessions (opened here or adopted), by id. */
  private sessions = new Map<string, Local>();
  /** Adoptions under way, so concurrent requests of one session share one. */
  private adopting = new Map<string, Promise<Local | undefined>>();
  /** Numbers this gateway's session copies (`Local.copy`). */
  private copies = 0;
  private readonly stopForwarding: () => void;
  /** Every gateway's sessions (session-directory.ts): shared over NATS in distributed mode, else this process's. */
  readonly directory: SessionDirectory;
  /** Local session ids per owning address and kind (`poolOf`), for MAX_SESSIONS_PER_ADDRESS. */
  private byOwner = new Map<string, Set<string>>();
  private stores = new Map<string, { store: StoreRecord | null; at: number }>();
  private sweeper: ReturnType<typeof setInterval>;
  /** Set by close(): the gateway is stopping and keeps no new session. */
  private closing = false;
  /** Aborted by close(): questions to the human still waiting end as not completed (confirm.ts). */
  private readonly stopping = new AbortController();
  /** Tool calls of sessions still running, so close() can let them answer before their streams end. */
  private readonly inFlight = new Set<Promise<unknown>>();

  private readonly siteOrigin: string;
  /** How often a waiting question sends progress to a call that asked for it (confirm.ts; tests shorten it). */
  confirmProgressEveryMs = CONFIRM_PROGRESS_EVERY_MS;
  /** How often a GET event stream opened with a credential re-checks it (`eventStream`; tests shorten it). */
  streamRecheckEveryMs = STREAM_RECHECK_MS;

  constructor(readonly svc: Services) {
    this.siteOrigin = new URL(svc.siteUrl).origin;
    this.table = buildToolTable(ALL_TOOLS);
    // boot.ts opens the process's directory and closes it after this gateway (`openSessionDirectory`)
    const directory = svc.extras.get(SESSION_DIRECTORY) as SessionDirectory | undefined;
    if (!directory) throw new Error("the MCP session directory is not open (boot.ts opens it before the routes)");
    this.directory = directory;
    this.stopForwarding = this.directory.onForwarded((id, message) => void (message.method === "notifications/cancelled" ? this.cancelHere(id, message) : this.answerHere(id, message)));
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    (this.sweeper as { unref?: () => void }).unref?.();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /**
   * Shutdown (boot.ts, before the HTTP server stops): ends every session's transport. A client's GET stream and a
   * tool call waiting on `elicitation/create` are in-flight requests the server's drain would wait for without end
   * (audit B F2); closing the transport ends the streams, and a pending elicitation fails as one that got no answer
   * (UPSTREAM_UNAVAILABLE confirmation_not_completed: nothing changed). The sessions themselves stay in the
   * directory: with NATS, clients continue them on another gateway, which adopts them. A session whose initialize
   * finishes after this is closed at once.
   */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    this.stopForwarding();
    // First let the sessions' tool calls answer on their own streams (a waiting question fails at once), within
    // CLOSE_GRACE_MS; then end every stream.
    this.stopping.abort(new Error("the MCP gateway is shutting down"));
    await Promise.race([Promise.allSettled([...this.inFlight]), Bun.sleep(CLOSE_GRACE_MS)]);
    await Bun.sleep(0); // the SDK writes a handler's result to its stream after the handler returned
    const all = [...this.sessions.values()];
    for (const s of all) this.forget(s.id);
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  // ------------------------------------------------------------------------------------------- stores

  private async store(slug: string): Promise<StoreRecord | null> {
    const now = Date.now();
    const hit = this.stores.get(slug);
    if (hit && now - hit.at < STORE_CACHE_MS) return hit.store;
    // an ineligible store (suspended, hidden, UNVERIFIED) reads as an unknown one: reads.ts's rule, the one the
    // protected-resource metadata and the authorization server apply (gateway/oauth/common.ts `storeServes`)
    const store = isStoreSlug(slug) ? await findEligibleStore(this.svc.sql, slug) : null;
    if (this.stores.size > 10_000) this.stores.clear();
    this.stores.set(slug, { store, at: now });
    return store;
  }

  // ------------------------------------------------------------------------------------------ sessions

  /** Local copies idle here this long are closed here; the session itself lives on in the directory until its TTL. */
  private sweep(): void {
    const cutoff = Date.now() - SESSION_IDLE_MS;
    for (const s of this.sessions.values()) if (s.lastSeen < cutoff) this.closeLocal(s);
  }

  /** Drops this gateway's copy only (idle here, shutdown, or found missing from the directory). */
  private closeLocal(s: Local): void {
    this.forget(s.id);
    void s.transport.close().catch(() => undefined);
  }

  /**
   * A cap evicted this copy (its own address's LRU, or the table's). A session opened here ends for every gateway;
   * an adopted copy is only dropped here, so a cap on this gateway never ends a session in use on another.
   */
  private evict(s: Local): void {
    this.closeLocal(s);
    if (!s.opened) return;
    void this.directory.delete(s.id).catch((err) => log.warn("could not remove an evicted MCP session from the directory", { error: err as Error }));
  }

  /** Keeps a copy that finished initializing; false (closed) while stopping, or when the session has one already. */
  private remember(s: Local): boolean {
    const live = this.sessions.get(s.id);
    if (this.closing || (live && live.transport !== s.transport)) {
      void s.transport.close().catch(() => undefined);
      return false;
    }
    this.sessions.set(s.id, s);
    const key = poolOf(s.owner, s.opened);
    let mine = this.byOwner.get(key);
    if (!mine) this.byOwner.set(key, (mine = new Set()));
    mine.add(s.id);
    return true;
  }

  private forget(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    const key = poolOf(s.owner, s.opened);
    const mine = this.byOwner.get(key);
    mine?.delete(id);
    if (mine && mine.size === 0) this.byOwner.delete(key);
  }

  /**
   * `server.connect(transport)`, with the ids of the requests this copy sends the client (`elicitation/create`)
   * made unique across every copy of the session on every gateway: `<gatewayId>.<copy>.<n>` instead of the SDK's
   * own counter, which starts at 0 in each copy. Without it, two gateways' questions in one session could both be id
   * 0 and the human's answer to one could approve the other. The client's answer carries the id back, so it names
   * the gateway and copy that asked (`routeAnswer`); the SDK gets its own number again.
   */
  private async connect(server: Server, transport: WebStandardStreamableHTTPServerTransport): Promise<void> {
    const prefix = `${this.directory.gatewayId}.${++this.copies}.`;
    copyNumbers.set(transport, this.copies);
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      const m = message as Record<string, unknown>;
      if (typeof m.method === "string" && typeof m.id === "number") return send({ ...message, id: `${prefix}${m.id}` } as typeof message, options);
      const params = m.params as { requestId?: unknown } | undefined;
      if (m.method === "notifications/cancelled" && typeof params?.requestId === "number") {
        return send({ ...message, params: { ...params, requestId: `${prefix}${params.requestId}` } } as typeof message, options);
      }
      return send(message, options);
    };
    await server.connect(transport);
    const receive = transport.onmessage!;
    transport.onmessage = (message, extra) => {
      const m = message as Record<string, unknown>;
      if (!("method" in m) && typeof m.id === "string" && m.id.startsWith(prefix)) return receive({ ...message, id: Number(m.id.slice(prefix.length)) } as typeof message, extra);
      return receive(message, extra);
    };
  }

  /**
   * A client's answer (a JSON-RPC response) in a session: to the copy whose question it answers, here or, forwarded
   * over NATS, on the gateway that asked (docs/decisions.md, "MCP sessions in a shared directory"). An answer to a
   * copy that is gone is dropped: its question already ended as not completed. Always 202 to the client: a forward
   * that fails (NATS gone) is logged and the answer lost, as an answer to a copy that is gone is (review RH, finding 4).
   */
  private async routeAnswer(session: Session, message: Record<string, unknown>, request: Request): Promise<void> {
    const to = askedBy(message.id);
    if (!to) return;
    if (to.gateway !== this.directory.gatewayId) {
      return this.directory.forward(to.gateway, session.held.record.id, message).catch((err) => log.warn("could not forward an MCP answer to the gateway that asked", { error: err as Error }));
    }
    const local = this.sessions.get(session.held.record.id);
    if (local && local.copy === to.copy) await this.feed(local, message, request.url);
  }

  /** An answer another gateway forwarded here (`routeAnswer`); that gateway checked the caller's binding. */
  private async answerHere(sessionId: string, message: Record<string, unknown>): Promise<void> {
    const to = askedBy(message.id);
    const local = this.sessions.get(sessionId);
    if (!to || to.gateway !== this.directory.gatewayId || !local || local.copy !== to.copy) return;
    await this.feed(local, message, this.svc.siteUrl).catch((err) => log.warn("could not deliver a forwarded MCP answer", { error: err as Error }));
  }

  /**
   * A client's `notifications/cancelled` in a session whose binding the caller passed. Its `requestId` is the
   * client's own id of the call and names no gateway: the call runs where the client's POST of it landed, maybe on
   * another gateway (docs/decisions.md, "MCP sessions in a shared directory"). When a copy here runs it, it is
   * cancelled here; otherwise the cancel is broadcast over NATS and only a gateway whose copy of this very session
   * runs that request acts on it (`cancelHere`), so a cancel can end no call of another session. No adoption: a copy
   * made for a cancel would run nothing. Cost: one small publish per cancel of a call not running here (the message
   * is rebuilt from the request id, at most MAX_BROADCAST_ID characters, and a reason cut to 200, so it always fits
   * NATS's `max_payload`), a map lookup on each gateway receiving it; nothing on the calls' path but a set entry. Always 202, as the SDK answers a notification; a broadcast that fails is logged.
   */
  private async routeCancel(session: Session, message: JsonRpcRequest, request: Request): Promise<void> {
    const requestId = message.params?.requestId;
    if (typeof requestId !== "string" && typeof requestId !== "number") return; // names no request: the SDK ignores it too
    const reason = message.params?.reason;
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, ...(typeof reason === "string" ? { reason: reason.slice(0, 200) } : {}) } };
    const id = session.held.record.id;
    const local = this.sessions.get(id);
    if (local?.running.has(requestId)) {
      return this.feed(local, cancel, request.url).catch((err) => log.warn("could not deliver an MCP cancel", { error: err as Error }));
    }
    if (typeof requestId === "string" && requestId.length > MAX_BROADCAST_ID) return;
    await this.directory.broadcast(id, cancel).catch((err) => log.warn("could not broadcast an MCP cancel to the other gateways", { error: err as Error }));
  }

  /** A cancel another gateway broadcast (`routeCancel`; that gateway checked the caller's binding): ours if a copy of this session here runs the request. */
  private async cancelHere(sessionId: string, message: Record<string, unknown>): Promise<void> {
    const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
    const local = this.sessions.get(sessionId);
    if (!local || (typeof requestId !== "string" && typeof requestId !== "number") || !local.running.has(requestId)) return;
    await this.feed(local, message, this.svc.siteUrl).catch((err) => log.warn("could not deliver a broadcast MCP cancel", { error: err as Error }));
  }

  private async feed(local: Local, message: Record<string, unknown>, url: string): Promise<void> {
    const headers = { accept: "application/json, text/event-stream", "content-type": "application/json", "mcp-session-id": local.id };
    await (await local.transport.handleRequest(new Request(url, { method: "POST", headers, body: "{}" }), { parsedBody: message })).text();
  }

  /**
   * The session named by a request's Mcp-Session-Id, from the directory (read on every request: the entry is the
   * truth for the binding, and a session DELETEd on another gateway is gone here at once), with this gateway's local
   * copy if any. A local copy whose entry is gone (deleted elsewhere, expired) is closed. Undefined: 404.
   */
  private async findSession(id: string, store: StoreRecord, endpoint: Endpoint): Promise<Session | undefined> {
    const held = await this.directory.get(id).catch((err: unknown) => {
      throw directoryUnavailable(err);
    });
    const local = this.sessions.get(id);
    if (!held) {
      if (local) this.closeLocal(local);
      return undefined;
    }
    if (held.record.slug !== store.slug || held.record.endpoint !== endpoint) return undefined;
    const now = Date.now();
    if (local) local.lastSeen = now;
    await this.directory.touch(held, now).catch((err: unknown) => {
      throw directoryUnavailable(err);
    });
    return { held, local };
  }

  /**
   * This gateway's SDK copy of the session, adopting it first when it was opened on another gateway (or this one's
   * copy was dropped): a new `Server` + transport whose `sessionIdGenerator` returns the session's id, brought to
   * the initialized state through the SDK's public API by replaying the client's stored `initialize` (and
   * `notifications/initialized`), so the client's capabilities (elicitation) and protocol version are the ones it
   * negotiated. The replayed answer is dropped: the client had it from the gateway that opened the session.
   * Concurrent requests of one session share one adoption, and a request that read "no copy" before an adoption
   * finished takes the copy it made: two copies would each ask the human their own questions, and the answer to the
   * first one's would be dropped once the second replaced it (review RH, finding 1). Undefined when its address has
   * no slot left here.
   */
  private async localOf(session: Session, store: StoreRecord): Promise<Local | undefined> {
    if (session.local) return session.local;
    const id = session.held.record.id;
    const existing = this.sessions.get(id);
    if (existing) return (session.local = existing);
    let adopting = this.adopting.get(id);
    if (!adopting) {
      adopting = this.adopt(session.held.record, store).finally(() => this.adopting.delete(id));
      this.adopting.set(id, adopting);
    }
    return (session.local = await adopting);
  }

  private async adopt(r: SessionRecord, store: StoreRecord): Promise<Local | undefined> {
    const opened = this.newSession(store, r.endpoint, r.owner, { enabled: r.enabled, adoptId: r.id });
    if (!opened) return undefined;
    const { server, transport, release } = opened;
    try {
      await this.connect(server, transport);
      const url = `${this.svc.siteUrl}/${r.slug}/mcp`;
      const headers = { accept: "application/json, text/event-stream", "content-type": "application/json" };
      const replay = async (message: unknown, more: Record<string, string> = {}) => {
        const res = await transport.handleRequest(new Request(url, { method: "POST", headers: { ...headers, ...more }, body: "{}" }), { parsedBody: message });
        await res.text(); // the SSE stream of the replayed initialize ends once its answer is written
        return res.status;
      };
      const status = await replay({ jsonrpc: "2.0", id: 0, method: "initialize", params: r.client });
      const local = this.sessions.get(r.id);
      if (status !== 200 || !local || local.transport !== transport) {
        void transport.close().catch(() => undefined);
        if (local?.transport === transport) this.forget(r.id);
        return status === 200 ? local : undefined; // `remember` kept a copy made meanwhile: that one serves
      }
      await replay({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": r.id, "mcp-protocol-version": r.protocolVersion });
      log.debug("adopted an MCP session opened on another gateway", { endpoint: r.endpoint, slug: r.slug });
      return local;
    } finally {
      release();
    }
  }

  /**
   * A new session's server and transport, with a slot reserved for it in its address's set (review H, finding 3):
   * the session itself is recorded only once the SDK has answered `initialize`, so without the reservation
   * concurrent initializes from one address all saw the old count (1,000 at once left it 200 sessions). `release`
   * gives the slot back; call it when the initialize is over (a no-op once the session took the slot).
   * Undefined when every one of the address's slots is a session still being initialized (nothing of its own to
   * close): the caller refuses the initialize.
   * `adoptId`: the local copy of a session opened elsewhere (`adopt`); without it a new session's.
   */
  private newSession(
    store: StoreRecord,
    endpoint: Endpoint,
    owner: string,
    how: { enabled: readonly string[] | null; adoptId?: string },
  ): { server: Server; transport: WebStandardStreamableHTTPServerTransport; release: () => void } | undefined {
    const opened = how.adoptId === undefined;
    const pool = poolOf(owner, opened);
    const mine = this.byOwner.get(pool);
    let oldest: Local | undefined;
    if (mine && mine.size >= MAX_SESSIONS_PER_ADDRESS) {
      // this address is at its cap of sessions opened (or adopted) here: it gives up its own least recently used one
      // of that kind (reserved slots have none)
      for (const id of mine) {
        const s = this.sessions.get(id);
        if (s && (!oldest || s.lastSeen < oldest.lastSeen)) oldest = s;
      }
      if (!oldest) return undefined;
    } else if (this.sessions.size >= MAX_SESSIONS) {
      // the table is full (many addresses): the least recently used adopted copy (dropping it ends nothing), else
      // the least recently used session overall
      let oldestAdopted: Local | undefined;
      for (const s of this.sessions.values()) {
        if (!oldest || s.lastSeen < oldest.lastSeen) oldest = s;
        if (!s.opened && (!oldestAdopted || s.lastSeen < oldestAdopted.lastSeen)) oldestAdopted = s;
      }
      oldest = oldestAdopted ?? oldest;
    }
    if (oldest) this.evict(oldest);
    const slot = `pending:${crypto.randomUUID()}`;
    let slots = this.byOwner.get(pool);
    if (!slots) this.byOwner.set(pool, (slots = new Set()));
    slots.add(slot);
    const release = () => {
      const m = this.byOwner.get(pool);
      if (m?.delete(slot) && m.size === 0) this.byOwner.delete(pool);
    };
    const enabled = how.enabled;
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: false } },
      instructions:
        `Commerce tools for ${store.name} (${store.slug}). Discovery tools are public; cart, checkout and order tools need ` +
        "an X-Agent-Api-Key or an OAuth bearer token. Write tools ask the human through elicitation. Errors carry " +
        "structuredContent.error {code, remedy, retryable, scope, details, reference}.",
    });
    const slug = store.slug;
    const running = new Set<RequestId>();
    server.setRequestHandler(ListToolsRequestSchema, async (req) => {
      const bad = cursorError(req.params);
      if (bad) throw new McpError(RpcErrorCode.InvalidParams, bad);
      return { tools: this.table.listFor(endpoint, enabled) as never[] };
    });
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      // from now on a client's cancel of this call, POSTed to any gateway, is delivered to this copy (`routeCancel`)
      running.add(extra.requestId);
      try {
        const principal = (extra.authInfo?.extra?.principal as CallPrincipal | undefined) ?? { caller: null, customer: null, customerError: null };
        const current = (await this.store(slug)) ?? store;
        const t = this.table.served(req.params.name, endpoint, enabled);
        // The call's own signal (notifications/cancelled, a closed stream) withdraws the question too (audit A5 H1).
        const token = extra._meta?.progressToken;
        const confirmer = elicitingConfirmer(server, extra.requestId, {
          signal: AbortSignal.any([extra.signal, this.stopping.signal]),
          progress: token === undefined ? undefined : { token, send: (n) => extra.sendNotification(n) },
          progressEveryMs: this.confirmProgressEveryMs,
        });
        const call = runTool(t, req.params.name, req.params.arguments, this.context(current, endpoint, principal, confirmer));
        this.inFlight.add(call);
        try {
          return (await call) as never;
        } finally {
          this.inFlight.delete(call);
        }
      } finally {
        running.delete(extra.requestId);
      }
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => how.adoptId ?? crypto.randomUUID(),
      onsessioninitialized: async (id) => {
        release();
        this.remember({ id, copy: copyOf(transport), server, transport, lastSeen: Date.now(), owner, opened, running });
      },
      onsessionclosed: async (id) => {
        // DELETE: ends the session for every gateway (their local copies close when they next look it up)
        this.forget(id);
        await this.directory.delete(id).catch((err: unknown) => {
          throw directoryUnavailable(err);
        });
      },
    });
    return { server, transport, release };
  }

  private context(store: StoreRecord, endpoint: Endpoint, p: CallPrincipal, confirmer: Confirmer): ToolContext {
    return {
      svc: this.svc,
      store,
      endpoint,
      caller: p.caller,
      customer: p.customer,
      customerError: p.customerError,
      now: new Date(this.svc.clock.now()),
      confirm: (r) => confirmer.confirm(r),
      openUrl: (u, m) => confirmer.openUrl(u, m),
    };
  }

  // ----------------------------------------------------------------------------------------- admission

  /**
   * Authenticates the caller (API key; OAuth bearer once the OAuth module lands) and admits the spec's layers for
   * one tools/call: per key + per tool on /mcp, the dedicated bucket on /mcp/{discovery,customer,checkout}, the
   * demo bucket for keyless demo-store calls, per IP for anonymous callers.
   */
  private async admit(request: Request, ip: string, headers: Headers, store: StoreRecord, endpoint: Endpoint, toolName: string, needsKey: boolean): Promise<CallPrincipal> {
    const svc = this.svc;
    const { customer, customerError } = await this.customerOf(request, store, endpoint);
    const hasKey = request.headers.has("x-agent-api-key");
    const hasAuthz = request.headers.has("authorization");
    const surface = surfaceOf(endpoint, store.slug, hasKey || hasAuthz);
    const customerId = customer ? customerLimitId(store.slug, customer) : undefined;
    // The per-tool layer is one budget per operation, not per name: a UCP alias (ucp_search_catalog,
    // ucp_create_cart, ucp_complete_checkout) spends its base tool's bucket (audit B F3).
    const toolBucket = this.table.byName.get(toolName)?.def.rateBucket;

    if (hasKey || hasAuthz) {
      try {
        const access = await verifyMcpAccess(svc, { slug: store.slug, request, headers, limits: { ip, surface, toolName: toolBucket, customerId } });
        const refused = this.endpointRefusal(access, store, endpoint, request, headers);
        if (refused) throw refused;
        if (access.kind === "key") {
          const a = access.agent;
          return { caller: { kind: "agent-key", keyId: a.keyId, userId: a.userId, scopes: a.scopes, tier: a.tier, plan: a.plan }, customer, customerError };
        }
        if (access.kind === "oauth") {
          return {
            caller: { kind: "oauth", keyId: `oauth:${access.clientId}:${access.sub}`, userId: access.sub, scopes: access.scopes, tier: "STARTER", clientId: access.clientId },
            customer,
            customerError,
          };
        }
      } catch (err) {
        throw this.refusal(err);
      }
    }
    try {
      const ctx = { surface, ip, toolName: toolBucket ?? null, customerId: customerId ?? null };
      if (!svc.config.RATE_LIMITS_ENABLED) setStaticRateHeaders(headers, ctx);
      else setRateHeaders(headers, await admitOthers(svc, bucketsFor(ctx), headers));
    } catch (err) {
      throw this.refusal(err);
    }
    if (needsKey) {
      // the scope hint (MCP authorization, scope selection): the default agent scopes plus what this tool needs, so
      // an OAuth client does not ask the human for every scope in scopes_supported (checkout included) up front
      // (the least scope that works: checkout:delegate for the ucp_* checkout tools; review R2-6)
      const ask = await challengeScope(svc, this.table.byName.get(toolName)?.def.scopes ?? []);
      headers["www-authenticate"] = mcpChallenge(svc, mcpResourceRefOf(store.slug, request), { scope: challengeScopes([], ask ? [ask] : []) });
      // a real merchant's checkout endpoint refuses an agent key (endpointRefusal), so its anonymous 401 names the one
      // credential it takes instead of sending the agent to a second 401 (review D-2)
      const realCheckout = endpoint === "checkout" && store.slug !== DEMO_STORE;
      const needs = realCheckout
        ? "an OAuth 2.0 access token from the client_credentials grant (Authorization: Bearer); an agent key or a user-delegated token is refused on this endpoint"
        : "an agent key (X-Agent-Api-Key) or an OAuth access token (Authorization: Bearer)";
      throw new HttpRefusal(401, "unauthorized", `${toolName} needs ${needs}.`, realCheckout ? { tool: toolName, required_grant: "client_credentials" } : { tool: toolName });
    }
    return { caller: null, customer, customerError };
  }

  /**
   * The endpoint's own rule for a credential that authenticated, or undefined when it may be used here. Applied to
   * every request that carries one: `tools/call` (`admit`), `initialize` (`admitInitialize`) and every other message,
   * GET and DELETE (`peekCaller`). A session opened with a credential the endpoint refuses could only ever answer its
   * calls with a refusal, and inside a session that refusal was hidden as "Session not found", so the client was never
   * told to use OAuth and re-initialized in a loop (audit S-1).
   * - A real merchant's checkout endpoint takes no API key and no user-delegated token (spec, Authentication 1: "an
   *   API key is rejected with 401", machine-to-machine credentials and an agent trust signal; audit G2).
   * - RFC 8707 audience binding (audit N11): a token for the store's whole MCP resource is good on every endpoint of
   *   the store; one issued for a dedicated endpoint only there. The older path's resource ({site_url}/mcp/{slug}) is
   *   the whole store's under its other name.
   */
  private endpointRefusal(access: McpAccess, store: StoreRecord, endpoint: Endpoint, request: Request, headers: Headers): HttpRefusal | undefined {
    const svc = this.svc;
    const realCheckout = endpoint === "checkout" && store.slug !== DEMO_STORE;
    const principal = principalOf(access) ?? undefined;
    if (access.kind === "key" && realCheckout) {
      headers["www-authenticate"] = mcpChallenge(svc, mcpResourceRefOf(store.slug, request), { code: "invalid_token", description: "the checkout endpoint needs an OAuth access token" });
      return new HttpRefusal(401, "unauthorized", "The checkout endpoint of a merchant store needs an OAuth 2.0 access token, not an API key.", { endpoint }, principal);
    }
    if (access.kind !== "oauth") return undefined;
    const whole = [mcpResource(svc, store.slug), legacyMcpResource(svc, store.slug)];
    if (!whole.includes(access.audience) && access.audience !== mcpResource(svc, store.slug, endpoint === "main" ? undefined : endpoint)) {
      headers["www-authenticate"] = mcpChallenge(svc, mcpResourceRefOf(store.slug, request), { code: "invalid_token", description: "the access token was issued for another endpoint of this store" });
      return new HttpRefusal(401, "unauthorized", "The access token was issued for another MCP endpoint of this store (its resource/audience).", { endpoint, audience: access.audience }, principal);
    }
    if (realCheckout && !access.machineToMachine) {
      headers["www-authenticate"] = mcpChallenge(svc, mcpResourceRefOf(store.slug, request), {
        code: "invalid_token",
        description: "the checkout endpoint needs a client_credentials access token carrying the agent trust signal",
      });
      return new HttpRefusal(
        401,
        "unauthorized",
        "The checkout endpoint of a merchant store needs a machine-to-machine (client_credentials) access token, which carries the agent trust signal.",
        { endpoint, required_grant: "client_credentials" },
        principal,
      );
    }
    return undefined;
  }

  /**
   * The end customer of the request's customer token, or why it was refused: on the customer endpoint whose orders
   * the tools read, on the main and checkout endpoints the customer a checkout buys for (review R3-8: a purchase on
   * `/{slug}/mcp/checkout` with the header is the customer's too). The discovery endpoint has no use for one.
   */
  private async customerOf(request: Request, store: StoreRecord, endpoint: Endpoint): Promise<Pick<CallPrincipal, "customer" | "customerError">> {
    if (endpoint === "discovery") return { customer: null, customerError: null };
    const token = request.headers.get(CUSTOMER_HEADER);
    if (!token) return { customer: null, customerError: null };
    try {
      return { customer: await verifyCustomerToken(this.svc, token.trim(), store.slug), customerError: null };
    } catch (err) {
      const e = err as ActorError;
      return { customer: null, customerError: { code: e.code, message: e.message, details: e.details } };
    }
  }

  /**
   * X-RateLimit-* for a protocol message that no layer counts (tools/list, ping, notifications, resources/*,
   * prompts/*, a client's answer to the server, GET of the SSE stream, DELETE of the session): the buckets a
   * `tools/call` of this caller on this endpoint would take (no per-tool bucket), as they stand, nothing consumed
   * (docs/access.md, "MCP requests and their buckets"). The spec counts tool calls; counting housekeeping in the
   * same buckets would make a client that lists tools or pings pay for it in tool calls. The credential is
   * verified so the headers are the caller's own buckets: an invalid or expired one is 401 with the challenge
   * (MCP authorization: invalid tokens get 401 on any request), counted per address like every failed credential;
   * one the endpoint refuses (`endpointRefusal`) is 401 with the challenge and the caller's buckets, nothing counted.
   */
  private async peekCaller(request: Request, ip: string, headers: Headers, store: StoreRecord, endpoint: Endpoint): Promise<string | null> {
    return principalOf(await this.peekAccess(request, ip, headers, store, endpoint));
  }

  /** `peekCaller`'s work, answering the verified access itself (the GET stream keeps an OAuth token's re-check). */
  private async peekAccess(request: Request, ip: string, headers: Headers, store: StoreRecord, endpoint: Endpoint): Promise<McpAccess> {
    const svc = this.svc;
    const credentialed = request.headers.has("x-agent-api-key") || request.headers.has("authorization");
    const surface = surfaceOf(endpoint, store.slug, credentialed);
    const { customer } = await this.customerOf(request, store, endpoint);
    const customerId = customer ? customerLimitId(store.slug, customer) : null;
    let access: McpAccess = { kind: "anonymous" };
    if (credentialed) {
      try {
        access = await verifyMcpAccess(svc, { slug: store.slug, request, headers, allowAnonymous: true });
      } catch (err) {
        if (err instanceof ActorError && (err.code === "unauthorized" || err.code === "token_expired")) {
          await admitAnonymous(svc, surface, ip, headers).catch((e: unknown) => {
            throw this.refusal(e);
          });
        }
        throw this.refusal(err);
      }
    }
    let buckets: BucketDescriptor[];
    let keyId: string | null = null;
    if (access.kind === "key") {
      keyId = access.agent.prefix;
      buckets = bucketsFor({ surface, ip, keyId, tier: access.agent.tier, customerId });
    } else if (access.kind === "oauth") {
      keyId = "oauth";
      buckets = oauthBuckets({ surface, ip, customerId: customerId ?? undefined }, access.clientId, access.sub);
    } else buckets = bucketsFor({ surface, ip, customerId });
    if (!svc.config.RATE_LIMITS_ENABLED) setStaticRateHeaders(headers, { surface, ip, keyId, customerId });
    else setRateHeaders(headers, await peekBuckets(svc, buckets));
    // The endpoint's own rule, after the headers so its 401 carries the caller's buckets like any answer here: a
    // credential this endpoint refuses is refused on every request (MCP authorization), not only on the tool calls it
    // could never make. Otherwise a sessionless tools/list with an API key on a real merchant's checkout endpoint
    // answered 200 (spec, Authentication 1: "an API key is rejected with 401"), and in an anonymous session it bound
    // the session to a key none of whose calls could succeed (audit S-1 follow-up). Anonymous callers are untouched.
    const refused = this.endpointRefusal(access, store, endpoint, request, headers);
    if (refused) throw refused;
    return access;
  }

  /**
   * True when a caller whose credential was refused with `refusal` is answered as for an unknown session: the session
   * is bound to a principal or opened elsewhere, and the credential is not the session owner's own authentic token that
   * merely expired — the owner needs that 401 `token_expired` to refresh and keep the session (issue #4). An expired
   * token of anyone else is hidden like junk (review R5 LOW-1), so it confirms nothing about the session.
   * Nor is a credential that authenticated as the session's own principal and was refused only by the endpoint's rule
   * (`endpointRefusal`): its holder owns the session, and "Session not found" would send its client round a
   * re-initialize loop instead of to OAuth (audit S-1). Anyone else's such refusal stays hidden.
   */
  private hiddenFrom(session: Session, ip: string, refusal: { code: string; principal?: string }, request: Request): boolean {
    const { principal, owner } = session.held.record;
    if (principal !== null && refusal.principal !== undefined && refusal.principal === principal) return false;
    if (refusal.code === "token_expired" && principal !== null) return principal !== expiredTokenPrincipal(request);
    return principal !== null || owner !== ipBucketKey(ip);
  }

  /** The unknown-session answer, without a challenge a refused credential may already have set. */
  private sessionNotFound(out: Out): Response | string {
    delete out.headers["www-authenticate"];
    return this.respond(rpcError(null, -32001, "Session not found"), 404, out);
  }

  /**
   * Session binding (MCP security best practices, session hijacking: "bind session IDs to user-specific
   * information"): every request is authenticated on its own, but a session also carries state another caller must
   * not borrow — above all the answers to `elicitation/create`, the human's "yes, pay" for a write tool. A session
   * bound to one principal refuses every other caller, anonymous ones included. One opened without a credential
   * belongs to the address that opened it until it is bound: only from there can it be used, and the first
   * credential presented from there binds it. From anywhere else, whoever presented its leaked id first (with any
   * valid key) took the session and its opener was told it did not exist (review R2-F3).
   * False: answer 404 as for an unknown session. A credential that does not authenticate is checked first; its 401
   * is answered as 404 too when the session is not its own (`hiddenFrom`, review R4-2), except the owner's own
   * expired token, whose 401 its client needs to refresh.
   * The binding is written to the directory (a compare-and-set: of two gateways binding one session at once, the
   * first wins and the other caller gets 404), so every gateway checks the same principal.
   */
  private async boundTo(session: Session, principal: string | null, ip: string): Promise<boolean> {
    const r = session.held.record;
    if (r.principal !== null) return r.principal === principal;
    if (r.owner !== ipBucketKey(ip)) return false;
    if (principal === null) return true;
    const after = await this.directory.bind(session.held, principal).catch((err: unknown) => {
      throw directoryUnavailable(err);
    });
    if (!after) return false;
    session.held = after;
    return after.record.principal === principal;
  }

  /**
   * X-RateLimit-* for an answer given before the message was read as one (unknown store or session, a body that is
   * not a valid JSON-RPC message, an unsupported protocol version, a method HTTP does not allow here): the address's
   * buckets on this endpoint as anonymous traffic meets them, nothing consumed. The credential is not looked at:
   * nothing was asked of it yet.
   */
  private async peekAddress(ip: string, headers: Headers, slug: string, endpoint: Endpoint, timeoutMs?: number): Promise<void> {
    const ctx = { surface: surfaceOf(endpoint, slug, false), ip };
    if (!this.svc.config.RATE_LIMITS_ENABLED) setStaticRateHeaders(headers, ctx);
    else setRateHeaders(headers, await peekBuckets(this.svc, bucketsFor(ctx), timeoutMs === undefined ? {} : { timeoutMs }));
  }

  /**
   * Origins a browser may call the MCP endpoints from: the service's own ({site_url}) and loopback ones (developer
   * tools such as the MCP Inspector's web UI on localhost). MCP clients that are not browsers send no Origin.
   */
  private allowedOrigin(origin: string): boolean {
    if (origin === this.siteOrigin) return true;
    let u: URL;
    try {
      u = new URL(origin);
    } catch {
      return false; // "null" (sandboxed frames, file:) and anything that is not an origin
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") return false;
    const host = u.hostname;
    return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  }

  /**
   * Rate admission for `initialize`, in the spec's global layer: per authenticated principal when the request
   * carries a credential, per address otherwise (review H, finding 2: counting a keyed client in its address's
   * anonymous bucket locked every client behind a busy NAT or agent platform out of the handshake). The credential
   * is verified for it: an invalid or expired one is refused 401 with the challenge, as MCP authorization requires,
   * and counted per address like any failed credential (verifyMcpAccess), so it cannot be used to skip the address's
   * bucket. The endpoint's own rule (`endpointRefusal`: no API key or user-delegated token on a real merchant's
   * checkout endpoint, the token's audience) is applied here too, with the same 401 challenge, so a client learns at
   * connect that it needs another credential instead of opening a session whose every call is refused (audit S-1).
   */
  private async admitInitialize(request: Request, ip: string, headers: Headers, store: StoreRecord, endpoint: Endpoint): Promise<string | null> {
    if (request.headers.has("x-agent-api-key") || request.headers.has("authorization")) {
      const access = await verifyMcpAccess(this.svc, { slug: store.slug, request, headers, limits: { ip, surface: "other" } });
      const refused = this.endpointRefusal(access, store, endpoint, request, headers);
      if (refused) throw refused;
      return principalOf(access);
    }
    await admitAnonymous(this.svc, "other", ip, headers);
    return null;
  }

  private refusal(err: unknown): HttpRefusal {
    if (err instanceof HttpRefusal) return err;
    if (err instanceof ActorError) return new HttpRefusal(ERROR_TABLE[err.code].http, err.code, err.message, err.details);
    throw err;
  }

  private refusalResponse(r: HttpRefusal, id: JsonRpcRequest["id"], out: Out, target: McpResourceRef): Response | string {
    if (r.status === 401 && !out.headers["www-authenticate"]) out.headers["www-authenticate"] = mcpChallenge(this.svc, target);
    const rpcCode = r.status === 429 ? -32029 : r.status === 401 ? -32001 : -32003;
    return this.respond(rpcError(id, rpcCode, r.message, { code: r.code, ...(r.details ?? {}) }), r.status, out);
  }

  /**
   * A JSON answer goes back as a string with its status and headers on Elysia's `set`: Elysia turns that into one
   * `new Response(string, set)`. Returning a Response instead makes Elysia build a second one to merge `set.headers`
   * (new Headers, `response.body` as a stream): ~8 % of a fast-path search call's CPU samples, ~10 % of its
   * in-process CPU (docs/performance.md, MCP). Elysia's metrics label now sees the real status too.
   */
  private respond(body: string | null, status: number, out: Out): Response | string {
    const headers = out.headers;
    if (body === null) {
      const h = new globalThis.Headers();
      for (const [k, v] of Object.entries(headers)) h.set(k, String(v));
      return new Response(null, { status, headers: h });
    }
    if (headers["content-type"] === undefined) headers["content-type"] = "application/json";
    out.status = status;
    return body;
  }

  // -------------------------------------------------------------------------------------------- entry

  /**
   * One HTTP request to a store's MCP endpoint. Every answer carries X-RateLimit-*: from the buckets that admitted or
   * refused it (tools/call, initialize), from the caller's buckets as they stand (other protocol messages,
   * `peekCaller`), or, for an answer given before the message was read, from the address's (`peekAddress`).
   */
  async handle(request: Request, slug: string, endpoint: Endpoint, ip: string, out: Out): Promise<Response | string> {
    const headers = out.headers;
    let res: Response | string;
    try {
      res = await this.handleMessage(request, slug, endpoint, ip, out);
    } catch (err) {
      // a 500/503 built by the error plugin from `set.headers`: best effort, the fault may be the bus itself
      if (headers["x-ratelimit-limit"] === undefined && !actorsDown(err)) await this.peekAddress(ip, headers, slug, endpoint, PEEK_AFTER_FAULT_MS).catch(() => undefined);
      throw err;
    }
    if (typeof res === "string") {
      // a 503 answered because no actor host responded: asking the ip actor again would only wait another whole
      // deadline for the headers (audit M-8: MCP answered an outage after two deadlines, REST after one)
      if (headers["x-ratelimit-limit"] === undefined && out.status !== 503) await this.peekAddress(ip, headers, slug, endpoint);
    } else if (!res.headers.has("x-ratelimit-limit")) {
      await this.peekAddress(ip, headers, slug, endpoint);
      for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) if (headers[h] !== undefined) res.headers.set(h, String(headers[h]));
    }
    return res;
  }

  private async handleMessage(request: Request, slug: string, endpoint: Endpoint, ip: string, out: Out): Promise<Response | string> {
    const headers = out.headers;
    // Streamable HTTP (2025-11-25), security warning 1: an Origin that is present and not allowed is 403, before
    // anything else (a DNS-rebinding page reaching a service on the user's machine sends its own origin)
    const origin = request.headers.get("origin");
    if (origin !== null && !this.allowedOrigin(origin)) {
      return this.respond(rpcError(null, -32000, "Forbidden: requests from this Origin are not accepted by the MCP endpoint.", { code: "forbidden" }), 403, out);
    }
    if (request.method !== "GET" && request.method !== "POST" && request.method !== "DELETE") {
      headers["allow"] = "GET, POST, DELETE";
      return this.respond(rpcError(null, -32000, "Method not allowed."), 405, out);
    }
    const store = await this.store(slug);
    if (!store) return this.respond(JSON.stringify(errorBody("store_not_found", `No MCP endpoint for store ${slug}: it does not exist or is inactive.`)), 404, out);

    const sessionId = request.headers.get("mcp-session-id");
    let session: Session | undefined;
    if (sessionId) {
      session = await this.findSession(sessionId, store, endpoint);
      if (!session) return this.respond(rpcError(null, -32001, "Session not found"), 404, out);
    }

    if (request.method === "GET" || request.method === "DELETE") {
      if (!session) {
        headers["allow"] = "POST";
        return this.respond(rpcError(null, -32000, `${request.method} needs an Mcp-Session-Id (initialize first).`), request.method === "GET" ? 405 : 400, out);
      }
      let access: McpAccess;
      try {
        access = await this.peekAccess(request, ip, headers, store, endpoint);
      } catch (err) {
        const r = this.refusal(err);
        if (this.hiddenFrom(session, ip, r, request)) return this.sessionNotFound(out);
        return this.refusalResponse(r, null, out, mcpResourceRefOf(store.slug, request));
      }
      if (!(await this.boundTo(session, principalOf(access), ip))) return this.respond(rpcError(null, -32001, "Session not found"), 404, out);
      const local = await this.localOf(session, store);
      if (!local) return this.noSlot(null, out, store, request);
      // a GET event stream opened with a credential ends once it is no longer good, or at its expiry (`eventStream`)
      const credential: StreamCredential | undefined = access.kind === "anonymous" ? undefined : { name: access.kind === "key" ? "agent key" : "access token", watch: access };
      return this.viaTransport(local.transport, request, undefined, headers, undefined, credential);
    }

    let body: unknown;
    let text = "";
    try {
      text = await request.text();
      body = JSON.parse(text);
    } catch (err) {
      // a chunked body cut at the body limit (gateway/plugins/body-limit.ts): the same 413 as a declared length gets,
      // a JSON-RPC error (the error plugin, gateway/mcp/oversize.ts)
      if (err instanceof ActorError && err.code === "payload_too_large") throw err;
      return this.respond(rpcError(null, -32700, "Parse error: the body is not JSON."), 400, out);
    }
    // Body bounds (gateway/plugins/json-depth.ts), one walk: checked before anything walks or serialises the
    // message. Too wide is refused outright. Too deep: only an argument of a well-formed tools/call may be the deep
    // part; that call still gets its tool error (M1).
    let deepArgument: string | undefined;
    const breach = jsonBoundBreach(body, MCP_BODY_BOUNDS);
    if (breach && breach.bound !== "depth") {
      const { message, details } = breachMessage(breach, "The message");
      return this.respond(rpcError(null, -32600, `Invalid Request: ${message}`, { code: "validation_error", ...details }), 400, out);
    }
    if (breach) {
      deepArgument = deepToolArgument(body);
      if (deepArgument === undefined) {
        return this.respond(rpcError(null, -32600, `Invalid Request: ${tooDeepMessage()}`, { code: "validation_error", maxDepth: MAX_JSON_DEPTH }), 400, out);
      }
    }
    const version = request.headers.get("mcp-protocol-version");
    if (version && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return this.respond(rpcError(null, -32000, `Unsupported protocol version ${version} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}).`), 400, out);
    }
    // Revision 2025-11-25 has no JSON-RPC batching. Refused inside a session too: a batch handed to the SDK
    // transport would run every call in it without admission (audit H2: 2,000 searches in 2.6 s from one address).
    if (Array.isArray(body)) {
      return this.respond(rpcError(null, -32600, "JSON-RPC batches are not supported; send one message per request."), 400, out);
    }
    const msg = body as JsonRpcRequest;
    const shape = messageShapeError(msg);
    if (shape) return this.respond(rpcError(null, -32600, `Invalid Request: ${shape}`), 400, out);
    const isRequest = typeof msg.method === "string" && msg.id !== undefined && msg.id !== null;

    if (isRequest && msg.method === "tools/call") return this.toolsCall(request, msg, store, endpoint, session, ip, out, deepArgument);

    // every other message but a sessionless initialize is counted nowhere; its headers show the caller's buckets
    if (session || !isRequest || msg.method !== "initialize") {
      let principal: string | null;
      try {
        principal = await this.peekCaller(request, ip, headers, store, endpoint);
      } catch (err) {
        const r = this.refusal(err);
        // a credential that did not authenticate, in a session it cannot be the owner of: as for an unknown session
        // (review R4-2); peekCaller consumes nothing, so the owner's own valid credential never lands here
        if (session && this.hiddenFrom(session, ip, r, request)) return this.sessionNotFound(out);
        return this.refusalResponse(r, isRequest ? msg.id : null, out, mcpResourceRefOf(store.slug, request));
      }
      if (session && !(await this.boundTo(session, principal, ip))) return this.respond(rpcError(null, -32001, "Session not found"), 404, out);
    }
    // the SDK's transport refuses it with id null; the id is known here (audit A5 L3)
    if (session && isRequest && msg.method === "initialize") return this.respond(rpcError(msg.id, -32600, "Invalid Request: Server already initialized"), 400, out);
    if (session && !session.local && isRequest && (msg.method === "tools/list" || msg.method === "ping") && acceptsJson(request)) {
      // a session this gateway holds no copy of: answered on the fast path, as without a session but with the
      // session's own tool set, rather than adopting it for a read
      return this.listOrPing(msg, endpoint, session.held.record.enabled, out);
    }
    if (session && !isRequest && msg.method === undefined) {
      // the client's answer to a question of ours (elicitation/create), maybe asked on another gateway. Bounded: an
      // answer is a few fields, and one forwarded over NATS must fit its max_payload (1 MiB, which a body at the
      // body limit plus the forward's wrapper does not: review RH, finding 4)
      if (Buffer.byteLength(text) > MAX_ANSWER_BYTES) {
        return this.respond(rpcError(null, -32600, `Invalid Request: an answer to a server request is at most ${MAX_ANSWER_BYTES} bytes.`, { code: "validation_error", maxBytes: MAX_ANSWER_BYTES }), 400, out);
      }
      await this.routeAnswer(session, msg as unknown as Record<string, unknown>, request);
      return this.respond(null, 202, out);
    }
    if (session && !isRequest && msg.method === "notifications/cancelled") {
      await this.routeCancel(session, msg, request);
      return this.respond(null, 202, out);
    }
    if (session) {
      const local = await this.localOf(session, store);
      if (!local) return this.noSlot(isRequest ? msg.id : null, out, store, request);
      return this.viaTransport(local.transport, request, body, headers);
    }

    // ---- no session
    if (isRequest && msg.method === "initialize") {
      const bad = initializeParamsError(msg.params);
      // the SDK would take a malformed initialize for some other request and answer "Server not initialized"
      if (bad) return this.respond(rpcError(msg.id, -32602, `Invalid params: ${bad}`), 400, out);
      // Counted in the caller's global bucket (500 / 15 min): a session costs ~43 KB and every client shares the
      // table, so no one can create them without bound (audit M3; docs/decisions.md).
      let principal: string | null;
      try {
        principal = await this.admitInitialize(request, ip, headers, store, endpoint);
      } catch (err) {
        return this.refusalResponse(this.refusal(err), msg.id, out, mcpResourceRefOf(store.slug, request));
      }
      const client = storedClientInit(msg.params as unknown as ClientInit);
      // what the SDK answers (Server._oninitialize): the client's version when supported, else the latest
      const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(client.protocolVersion) ? client.protocolVersion : LATEST_PROTOCOL_VERSION;
      const opened = this.newSession(store, endpoint, ipBucketKey(ip), { enabled: store.enabledMcpTools ?? null });
      if (!opened) return this.noSlot(msg.id, out, store, request);
      const { server, transport, release } = opened;
      try {
        await this.connect(server, transport);
        const res = await this.viaTransport(transport, request, body, headers);
        const id = transport.sessionId;
        if (!id || !this.sessions.has(id)) {
          void transport.close().catch(() => undefined);
          return res;
        }
        // in the directory before the client learns the id (the answer is not sent yet), so its next request may
        // reach any gateway
        const now = Date.now();
        const record: SessionRecord = { id, slug: store.slug, endpoint, enabled: store.enabledMcpTools ?? null, owner: ipBucketKey(ip), principal, protocolVersion, client, createdAt: now, lastUsedAt: now };
        try {
          await this.directory.put(record);
        } catch (err) {
          this.closeLocal(this.sessions.get(id)!);
          void res.body?.cancel().catch(() => undefined);
          throw directoryUnavailable(err);
        }
        return res;
      } finally {
        release();
      }
    }
    if (!isRequest) return this.respond(null, 202, out); // notifications and stray responses
    if (!acceptsJson(request)) return this.respond(rpcError(msg.id, -32000, "Not Acceptable: the client must accept application/json."), 406, out);
    if (msg.method === "ping" || msg.method === "tools/list") return this.listOrPing(msg, endpoint, store.enabledMcpTools ?? null, out);
    return this.respond(rpcError(msg.id, -32601, `Method not found: ${msg.method} (initialize a session for the full protocol).`), 200, out);
  }

  /** `ping` or `tools/list` answered as JSON on the fast path. */
  private listOrPing(msg: JsonRpcRequest, endpoint: Endpoint, enabled: readonly string[] | null, out: Out): Response | string {
    if (msg.method === "ping") return this.respond(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: {} }), 200, out);
    const bad = cursorError(msg.params);
    if (bad) return this.respond(rpcError(msg.id, -32602, bad), 200, out);
    const tools = this.table.listFor(endpoint, enabled);
    return this.respond(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: { tools } }), 200, out);
  }

  /** This gateway has no slot for the session: every one of the address's is a session still being initialized. */
  private noSlot(id: JsonRpcRequest["id"], out: Out, store: StoreRecord, request: Request): Response | string {
    const r = new HttpRefusal(429, "rate_limit_exceeded", `This address is already opening ${MAX_SESSIONS_PER_ADDRESS} MCP sessions; retry once they are open.`, {
      maxSessionsPerAddress: MAX_SESSIONS_PER_ADDRESS,
    });
    out.headers["retry-after"] = "1";
    return this.refusalResponse(r, id, out, mcpResourceRefOf(store.slug, request));
  }

  private async toolsCall(
    request: Request,
    msg: JsonRpcRequest,
    store: StoreRecord,
    endpoint: Endpoint,
    session: Session | undefined,
    ip: string,
    out: Out,
    deepArgument?: string,
  ): Promise<Response | string> {
    const headers = out.headers;
    const name = msg.params?.name;
    if (typeof name !== "string") return this.respond(rpcError(msg.id, -32602, "Invalid params: tools/call needs params.name."), 200, out);
    const args = msg.params?.arguments;
    if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args))) {
      // a request that fails the CallToolRequest schema is a protocol error (MCP tools, error handling), as the
      // SDK's own path answers it; a wrong argument inside the object stays the tool's INVALID_ARGUMENT
      return this.respond(rpcError(msg.id, -32602, "Invalid params: tools/call params.arguments must be an object."), 200, out);
    }
    const enabled = session ? session.held.record.enabled : (store.enabledMcpTools ?? null);
    const t = this.table.served(name, endpoint, enabled);
    // No credential in a session bound to one: 404 as for an unknown session, like ping or tools/list, before the
    // missing-credential 401 would confirm the session id is live (audit A5 L2). boundTo(…, null) binds nothing.
    const credentialed = request.headers.has("x-agent-api-key") || request.headers.has("authorization");
    if (session && !credentialed && !(await this.boundTo(session, null, ip))) return this.respond(rpcError(null, -32001, "Session not found"), 404, out);
    let principal: CallPrincipal;
    try {
      principal = await this.admit(request, ip, headers, store, endpoint, name, t?.def.auth === "key");
    } catch (err) {
      // A credential that does not authenticate (401), in a session bound to another caller or opened from another
      // address: 404 as for an unknown session, not the 401 that confirms the id is live (review R4-2). Other
      // refusals (429) stay: they can be the owner's own.
      if (err instanceof HttpRefusal && err.status === 401 && session && this.hiddenFrom(session, ip, err, request)) return this.sessionNotFound(out);
      if (err instanceof HttpRefusal) return this.refusalResponse(err, msg.id, out, mcpResourceRefOf(store.slug, request));
      throw err;
    }
    if (session && !(await this.boundTo(session, principal.caller?.keyId ?? null, ip))) return this.respond(rpcError(null, -32001, "Session not found"), 404, out);
    const lacking = insufficientOAuthScope(t, principal, args);
    const missing = lacking ? await challengeScope(this.svc, lacking, principal.caller!.clientId) : undefined;
    if (missing) {
      // MCP authorization (2025-11-25), scope challenge: an OAuth token without the tool's scope is HTTP 403 with
      // error="insufficient_scope" and the scopes to ask for (the token's own plus the missing one), so the client
      // can step up. API keys keep the tool error `forbidden` (their scopes are chosen at key creation, not here).
      headers["www-authenticate"] = mcpChallenge(this.svc, mcpResourceRefOf(store.slug, request), {
        code: "insufficient_scope",
        description: `${name} needs the ${missing} scope`,
        scope: challengeScopes(principal.caller!.scopes, [missing]),
      });
      return this.respond(rpcError(msg.id, -32003, `The access token lacks the "${missing}" scope needed for ${name}.`, { code: "forbidden", scope: missing, tool: name }), 403, out);
    }
    if (deepArgument !== undefined && t) {
      // never handed to the validator or the SDK: the argument is refused by name, without echoing it
      if (!acceptsJson(request)) return this.respond(rpcError(msg.id, -32000, "Not Acceptable: the client must accept application/json."), 406, out);
      const result = errorResult(this.svc.siteUrl, "INVALID_ARGUMENT", `Argument '${deepArgument}' nests more than ${MAX_ARGUMENT_DEPTH} levels deep.`, {
        field: deepArgument,
        maxDepth: MAX_ARGUMENT_DEPTH,
      });
      return this.respond(toolsCallResponse(msg.id, result), 200, out);
    }
    if (session && (t?.def.confirmation || t?.def.mayAsk)) {
      // arguments are checked as sent: the SDK's request schema drops an own "__proto__" key, so the call ran (fuzz F2-1)
      const bad = acceptsJson(request) ? argumentError(t, args ?? {}) : null;
      if (bad) return this.respond(toolsCallResponse(msg.id, resultFromThrown(this.svc.siteUrl, bad)), 200, out);
      // a write tool in a session: through the SDK so the human can be asked on this call's stream
      const local = await this.localOf(session, store);
      if (!local) return this.noSlot(msg.id, out, store, request);
      return this.viaTransport(local.transport, request, msg, headers, principal);
    }
    if (!acceptsJson(request)) return this.respond(rpcError(msg.id, -32000, "Not Acceptable: the client must accept application/json."), 406, out);
    const result = await runTool(t, name, msg.params?.arguments, this.context(store, endpoint, principal, cannotAsk));
    return this.respond(toolsCallResponse(msg.id, result), 200, out);
  }

  private async viaTransport(
    transport: WebStandardStreamableHTTPServerTransport,
    request: Request,
    parsedBody: unknown,
    headers: Headers,
    principal?: CallPrincipal,
    credential?: StreamCredential,
  ): Promise<Response> {
    const res = await transport.handleRequest(request, {
      ...(parsedBody !== undefined ? { parsedBody } : {}),
      ...(principal ? { authInfo: { token: "", clientId: principal.caller?.keyId ?? "anonymous", scopes: [...(principal.caller?.scopes ?? [])], extra: { principal } } } : {}),
    });
    const h = new globalThis.Headers(res.headers);
    for (const [k, v] of Object.entries(headers)) if (!h.has(k)) h.set(k, String(v));
    let body = res.body;
    // The GET stream's first bytes are otherwise the SDK's keep-alive 15 s later, and Bun sends a streamed
    // response's status and headers with its first bytes: a client waited 15 s to learn the stream was open.
    if (request.method === "GET" && body && h.get("content-type")?.startsWith("text/event-stream")) {
      const clock = this.svc.clock;
      body = eventStream(body, credential && { everyMs: this.streamRecheckEveryMs, credential, now: () => clock.now() });
    }
    return new Response(body, { status: res.status, statusText: res.statusText, headers: h });
  }
}

/** What an `initialize` request's params lack (lifecycle: protocolVersion, capabilities, clientInfo {name, version}). */
function initializeParamsError(params: Record<string, unknown> | undefined): string | undefined {
  if (typeof params?.protocolVersion !== "string") return "initialize needs params.protocolVersion (a string).";
  if (!isObjectRecord(params.capabilities)) return "initialize needs params.capabilities (an object).";
  const info = params.clientInfo;
  if (!isObjectRecord(info) || typeof info.name !== "string" || typeof info.version !== "string") {
    return "initialize needs params.clientInfo with a name and a version (strings).";
  }
  return undefined;
}

/**
 * tools/list is not paginated (one store serves at most 50 tools), so this server never issues a cursor: any cursor a
 * client sends is invalid, which MCP pagination answers with -32602 rather than silently listing from the start.
 */
function cursorError(params: Record<string, unknown> | undefined): string | undefined {
  if (params?.cursor === undefined) return undefined;
  return typeof params.cursor === "string" ? "Invalid params: unknown cursor (tools/list is not paginated here; list without a cursor)." : "Invalid params: cursor must be a string.";
}

/**
 * The principal (`principalOf`'s form) of the bearer token a `token_expired` refusal was about. Read without verifying
 * again: that refusal comes only after the token's signature and audience were verified (infra/jwt.ts: jose checks
 * the signature before the expiry), so its claims are the issuer's. Null when the request carries no such token.
 */
function expiredTokenPrincipal(request: Request): string | null {
  const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
  if (!bearer) return null;
  try {
    const claims = decodeJwt(bearer);
    return typeof claims.client_id === "string" && typeof claims.sub === "string" ? `oauth:${claims.client_id}:${claims.sub}` : null;
  } catch {
    return null;
  }
}

/** Who a verified caller is, as sessions are bound (`Caller.keyId`'s form): null for an anonymous one. */
function principalOf(access: McpAccess): string | null {
  if (access.kind === "key") return access.agent.keyId;
  if (access.kind === "oauth") return `oauth:${access.clientId}:${access.sub}`;
  return null;
}

/**
 * The scopes of which an OAuth caller holds none though the call needs one (the tool's `scopes`, else those its
 * arguments add, ToolDef.argumentScopes; the challenge asks challengeScope's of them), or undefined.
 */
function insufficientOAuthScope(t: CompiledTool | undefined, p: CallPrincipal, args: unknown): readonly Scope[] | undefined {
  const caller = p.caller;
  if (!t || !caller || caller.kind !== "oauth" || t.def.auth !== "key") return undefined;
  for (const accepted of [t.def.scopes ?? [], t.def.argumentScopes?.(args) ?? []]) {
    if (accepted.length > 0 && !accepted.some((s) => caller.scopes.includes(s))) return accepted;
  }
  return undefined;
}

/** Space-separated scopes for a challenge: what the caller has (or the default agent scopes) plus what is needed. */
function challengeScopes(have: readonly string[], need: readonly string[] | undefined): string {
  const base = have.length > 0 ? have : DEFAULT_SCOPES;
  return [...new Set([...base, ...(need ?? []).slice(0, 1)])].join(" ");
}

/**
 * For a message past the nesting bound: the name of the tools/call argument that is too deep, when the message is
 * otherwise a shallow, well-formed tools/call (so the call can be admitted and answered INVALID_ARGUMENT), else
 * undefined (the whole request is refused).
 */
function deepToolArgument(body: unknown): string | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return undefined;
  const msg = body as JsonRpcRequest;
  if (msg.method !== "tools/call" || msg.params === null || typeof msg.params !== "object" || Array.isArray(msg.params)) return undefined;
  const args = msg.params.arguments;
  if (args === null || typeof args !== "object" || Array.isArray(args)) return undefined;
  if (exceedsJsonDepth({ ...msg, params: { ...msg.params, arguments: {} } })) return undefined;
  for (const [k, v] of Object.entries(args)) if (exceedsJsonDepth(v, MAX_ARGUMENT_DEPTH)) return k;
  return undefined;
}

/**
 * JSON-RPC 2.0 shape (audit N5): an id is a string or a number (MCP also forbids null on requests), a method a
 * string, params an object. Anything else is -32600 instead of being echoed back or answered 202 as a notification.
 */
function messageShapeError(msg: unknown): string | undefined {
  if (msg === null || typeof msg !== "object") return "not a JSON-RPC 2.0 message.";
  const m = msg as Record<string, unknown>;
  if (m.jsonrpc !== "2.0") return "not a JSON-RPC 2.0 message.";
  // MCP: "a string or integer ID"; the SDK's transport would answer 2.5 with -32700 Parse error (audit A5 L3)
  if ("id" in m && m.id !== null && typeof m.id !== "string" && !Number.isInteger(m.id)) return "id must be a string or an integer.";
  // a request (method and id) with a null id: refused here, in a session or not, instead of 202 without a session and
  // the SDK's -32700 within one (review H, N2). A null id stays legal on an error response.
  if ("method" in m && "id" in m && m.id === null) return "a request's id must not be null (MCP).";
  if ("method" in m && typeof m.method !== "string") return "method must be a string.";
  if ("params" in m && m.params !== undefined && (m.params === null || typeof m.params !== "object" || Array.isArray(m.params))) return "params must be an object.";
  if (!("method" in m) && !("result" in m) && !("error" in m)) return "neither a request, a notification nor a response.";
  return undefined;
}

/**
 * The JSON-RPC response of a fast-path `tools/call`. A success carries its data twice: `structuredContent` and, for
 * clients without structured output, the same JSON as its text block (successResult). That text IS the
 * serialisation of `structuredContent`, so it is spliced in instead of serialising the data a second time (search
 * results are most of the body: this halves the JSON work of a search call). Same bytes as JSON.stringify would give.
 */
export function toolsCallResponse(id: JsonRpcRequest["id"], result: ToolCallResult): string {
  const structured = serialisedStructuredContent(result);
  if (structured !== undefined && Object.keys(result).length === 2) {
    return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":${JSON.stringify(result.content)},"structuredContent":${structured}}}`;
  }
  return JSON.stringify({ jsonrpc: "2.0", id, result });
}

const OPENING_COMMENT = new TextEncoder().encode(": stream open\n\n");

/** The credential a GET event stream was opened with: how its closing comment names it, and what it re-checks. */
interface StreamCredential {
  name: "access token" | "agent key";
  watch: CredentialWatch;
}

/** The longest delay a timer takes (2^31 - 1 ms, ~24.8 days): a later expiry is reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The SSE comment a stream ends with when its credential is no longer good. */
function lapseComment(name: string, why: CredentialLapse): string {
  return why === "expired" ? `: ${name} expired; stream closed\n\n` : `: ${name} revoked (${why}); stream closed\n\n`;
}

/**
 * A session's GET event stream as sent: the SDK's stream with an SSE comment in front (ignored by every SSE parser);
 * cancelling it cancels the SDK's (which frees the session's one GET stream). With `recheck` (a stream opened with an
 * OAuth access token or an agent key), every `everyMs` the credential is read again (`CredentialWatch.lapsed`: one
 * statement or one actor message, at most one in flight per stream); once it is no longer good (revoked, its grant,
 * its client, the key's record gone) the stream says why in a comment and ends, and the client must reconnect with a
 * credential that is still good. Its expiry (an access token's `exp`, an expiring key's `expires_at`) ends it at that
 * instant, by a timer, with a comment saying it expired. A failed read (the database or the key's actor away) keeps the
 * stream: the next tick reads again; a revocation needs them too.
 */
function eventStream(
  body: ReadableStream<Uint8Array<ArrayBuffer>>,
  recheck?: { everyMs: number; credential: StreamCredential; now: () => number },
): ReadableStream<Uint8Array<ArrayBuffer>> {
  const reader = body.getReader();
  let ticks: ReturnType<typeof setInterval> | undefined;
  let expiry: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  const end = () => {
    ended = true;
    clearInterval(ticks);
    clearTimeout(expiry);
  };
  return new ReadableStream<Uint8Array<ArrayBuffer>>({
    start(c) {
      c.enqueue(OPENING_COMMENT);
      if (!recheck) return;
      const { credential, now } = recheck;
      const close = (why: CredentialLapse) => {
        if (ended) return;
        end();
        try {
          c.enqueue(new TextEncoder().encode(lapseComment(credential.name, why)));
          c.close();
        } catch {
          /* the client went away meanwhile */
        }
        void reader.cancel(new Error(`${credential.name} ${why === "expired" ? "expired" : `revoked (${why})`}`)).catch(() => undefined);
      };
      const expireAt = (at: number) => {
        if (ended) return;
        const left = at - now();
        if (left <= 0) return close("expired");
        expiry = setTimeout(() => expireAt(at), Math.min(left, MAX_TIMER_MS));
        (expiry as { unref?: () => void }).unref?.();
      };
      credential.watch
        .expiresAt()
        .then((at) => at !== null && expireAt(at))
        // not known (the key's actor away): the ticks' read judges the expiry too
        .catch(() => undefined);
      let checking = false;
      ticks = setInterval(() => {
        if (checking || ended) return;
        checking = true;
        credential.watch
          .lapsed()
          .then((why) => why && close(why))
          .catch(() => undefined)
          .finally(() => (checking = false));
      }, recheck.everyMs);
      (ticks as { unref?: () => void }).unref?.();
    },
    async pull(c) {
      const { done, value } = await reader.read();
      if (ended) return;
      if (done) {
        end();
        c.close();
      } else c.enqueue(value);
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
}

/** The most of a client's initialize params a session's directory entry keeps (`storedClientInit`). */
export const MAX_STORED_CLIENT_INIT = 16 * 1024;
const KEPT_CAPABILITIES = ["elicitation", "sampling", "roots", "tasks"];

/**
 * The client's initialize params as its session's directory entry keeps them, to replay on adoption: as sent when
 * their JSON is at most MAX_STORED_CLIENT_INIT long, else the capabilities this server can use (each at most 1 KiB)
 * and the client's name and version. A message may be 1 MiB and `initialize` is admitted 500 times per 15 minutes:
 * stored whole, one address could put 450 MB a quarter-hour into the shared bucket.
 */
function storedClientInit(p: ClientInit): ClientInit {
  const whole: ClientInit = { protocolVersion: p.protocolVersion, capabilities: p.capabilities, clientInfo: p.clientInfo };
  // bytes, as the bucket stores them: a length in UTF-16 units let 16,200 × "一" (48 KB) through (review RH, finding 5)
  if (jsonBytes(whole) <= MAX_STORED_CLIENT_INIT) return whole;
  const capabilities: Record<string, unknown> = {};
  for (const k of KEPT_CAPABILITIES) if (p.capabilities[k] !== undefined && jsonBytes(p.capabilities[k]) <= 1024) capabilities[k] = p.capabilities[k];
  const info = p.clientInfo as { name: string; version: string };
  return { protocolVersion: p.protocolVersion.slice(0, 64), capabilities, clientInfo: { name: info.name.slice(0, 256), version: info.version.slice(0, 256) } };
}

/** The UTF-8 size of a value's JSON. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** The session directory (NATS KV) did not answer: 503 service_unavailable, retryable, as an actor outage is. */
function directoryUnavailable(err: unknown): ActorError {
  log.warn("the MCP session directory is unavailable", { error: err as Error });
  return fail("service_unavailable", "MCP sessions are unavailable for a moment; retry.");
}

/** The gateway and session copy that asked the question a client's answer with this id answers (`McpGateway.connect`). */
function askedBy(id: unknown): { gateway: string; copy: number } | undefined {
  const m = typeof id === "string" ? /^([0-9a-f]{8})\.(\d+)\.\d+$/.exec(id) : null;
  return m ? { gateway: m[1]!, copy: Number(m[2]) } : undefined;
}

/** The `byOwner` set of an address's sessions opened on this gateway, or of its adopted copies. */
function poolOf(owner: string, opened: boolean): string {
  return `${opened ? "opened" : "adopted"} ${owner}`;
}

/** Each transport's copy number (`McpGateway.connect`), read when the session is remembered. */
const copyNumbers = new WeakMap<WebStandardStreamableHTTPServerTransport, number>();
function copyOf(transport: WebStandardStreamableHTTPServerTransport): number {
  return copyNumbers.get(transport) ?? 0;
}

const ENDPOINTS: Record<string, Endpoint> = { discovery: "discovery", customer: "customer", checkout: "checkout" };

export function mcpRoutes(svc: Services) {
  const gw = new McpGateway(svc);
  svc.extras.set("mcpGateway", gw);
  // the older path has its own layers too (the global plugin must not count it a second time)
  registerOwnLayer(new RegExp(`^/mcp/${STORE_SLUG_PART}/?$`));
  type Ctx = { request: Request; params: Record<string, string>; set: { headers: unknown; status?: unknown }; server: { requestIP(r: Request): { address: string } | null } | null };
  const go = (endpointOf: (p: Record<string, string>) => Endpoint | undefined) => async (c: Ctx) => {
    const headers = c.set.headers as Headers;
    const endpoint = endpointOf(c.params);
    if (!endpoint) {
      headers["content-type"] = "application/json";
      return new Response(JSON.stringify(errorBody("route_not_found", `No MCP endpoint ${new URL(c.request.url).pathname}.`)), { status: 404, headers: headers as Record<string, string> });
    }
    try {
      return await gw.handle(c.request, c.params.slug!, endpoint, clientIp(c.request, c.server), c.set as Out);
    } catch (err) {
      // a database outage is the envelope's 503 service_unavailable (plugins/errors.ts), as on REST, not a bug
      if (err instanceof ActorError || isDatabaseUnavailable(err)) throw err;
      // like REST 500s (plugins/errors.ts): the request id in the answer and the log, no stack in the answer
      const requestId = headers["x-request-id"];
      log.error("mcp request failed", { requestId, error: err as Error, stack: (err as Error)?.stack });
      throw fail("internal_error", "Internal server error.", { requestId });
    }
  };
  const main = go(() => "main");
  const dedicated = go((p) => ENDPOINTS[p.endpoint ?? ""]);
  const opts = { parse: "none" as const, detail: { hide: true } };
  const app = new Elysia({ name: "mcp" }).use(customerTokenRoutes(svc));
  // PUT, PATCH and OPTIONS reach the handler too, for its 405 with Allow (the endpoint exists; the method does not)
  for (const path of ["/:slug/mcp", "/mcp/:slug"]) {
    app.post(path, main as never, opts).get(path, main as never, opts).delete(path, main as never, opts);
    app.put(path, main as never, opts).patch(path, main as never, opts).options(path, main as never, opts);
  }
  const sub = "/:slug/mcp/:endpoint";
  app.post(sub, dedicated as never, opts).get(sub, dedicated as never, opts).delete(sub, dedicated as never, opts);
  app.put(sub, dedicated as never, opts).patch(sub, dedicated as never, opts).options(sub, dedicated as never, opts);
  return app;
}

export { LATEST_PROTOCOL_VERSION };
