/**
 * Authentication and admission for the gateway.
 *
 * `authenticateAgentNow(svc, req)`: one `authorize` message to the key's actor (`agent/<prefix>`) authenticates the
 * key (constant-time hash compare), admits the key's rate-limit buckets and checks the route access table (scope,
 * SANDBOX, feature tier); buckets owned by others (per IP, per customer) are admitted next. When the key's actor is
 * loaded in this process the whole admission is synchronous (`askNow`; `authorize` is an immutable message, passed
 * by reference). A request without a valid key is counted per IP, so even a 401 carries rate headers.
 *
 * `agentAuth(svc)`: routes mounted after it receive `agent: AgentPrincipal`. Keyed agentic REST routes are admitted
 * by the request hook (rate-limit.ts → `admitAgentEarly`), before their body is parsed or validated.
 *
 * `userAuth(svc)`: `Authorization: Bearer <JWT>` from POST /auth/login; routes receive `user: UserPrincipal`.
 *
 * Several admission steps may touch one request (the global plugin in rate-limit.ts, then a route's own layer):
 * the global bucket is consumed once per request (`markGlobalAdmitted`), and the headers always describe the
 * tightest bucket seen so far.
 */
import { Elysia } from "elysia";
import { agentActor } from "../../actors/agent/index.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { hashAgentKey, parseAgentKey } from "../../actors/agent/keys.ts";
import { pathOf } from "../url-path.ts";
import { log } from "../../infra/log.ts";
import { bucketsFor, type BucketDescriptor, type LimitContext, type Surface } from "../../actors/agent/limits.ts";
import type { RateView } from "../../actors/agent/messages.ts";
import type { Scope, Tier } from "../../actors/agent/access.ts";
import { ActorError, fail, type ErrorCode } from "../../actors/runtime/errors.ts";
import type { AnyActorDefinition, MessageBody, MessageType, ReplyOf } from "../../actors/runtime/define-actor.ts";
import { pepper, SESSION_AUDIENCE, tokenService } from "../identity.ts";
import type { Services } from "../services.ts";

export interface AgentPrincipal {
  keyId: string;
  prefix: string;
  userId: string;
  scopes: Scope[];
  tier: Tier;
  /** The account's plan that caps the key's features (null: no cap); the MCP tool check reads it. */
  plan: Tier | null;
}

export interface UserPrincipal {
  id: string;
  email: string;
  role: "operator" | "merchant";
}

type Headers = Record<string, string | number>;

const UNAUTHORIZED_KEY = "Missing or invalid API key (header X-Agent-Api-Key, format agnt_...).";

export function setRateHeaders(headers: Headers, rate: RateView | null | undefined): void {
  if (!rate) return;
  headers["x-ratelimit-limit"] = String(rate.limit);
  headers["x-ratelimit-remaining"] = String(rate.remaining);
  headers["x-ratelimit-reset"] = String(rate.reset);
  if (rate.retryAfter !== undefined) headers["retry-after"] = String(rate.retryAfter);
}

/**
 * With RATE_LIMITS_ENABLED=false nothing is counted, but clients still get the headers: the tightest bucket that
 * would apply, full, resetting one window from now. Pure arithmetic, no actor call.
 */
export function setStaticRateHeaders(headers: Headers, ctx: LimitContext): void {
  const list = bucketsFor(ctx);
  let b = list[0]!;
  for (const x of list) if (x.limit < b.limit) b = x;
  setRateHeaders(headers, { limit: b.limit, remaining: b.limit, reset: Math.ceil((Date.now() + b.windowMs) / 1000) });
}

/** The tighter of two bucket views (fewer remaining wins; on a tie the one resetting later). */
export function tighter(a: RateView | null, b: RateView | null): RateView | null {
  if (!a) return b;
  if (!b) return a;
  if (b.remaining !== a.remaining) return b.remaining < a.remaining ? b : a;
  return b.reset > a.reset ? b : a;
}

export function clientIp(request: Request, server: { requestIP(r: Request): { address: string } | null } | null): string {
  return server?.requestIP(request)?.address ?? "unknown";
}

/** Per request (keyed by its response-headers object): the global bucket is already admitted, with this view. */
const globalAdmitted = new WeakMap<object, RateView>();

export function markGlobalAdmitted(headers: Headers, rate: RateView | null): void {
  if (rate) globalAdmitted.set(headers, rate);
}

/**
 * Admits buckets held by ip/user/customer/oauth actors, owner by owner; if one refuses, the units taken from the
 * earlier owners are given back, and rate_limit_exceeded is thrown with the headers set. Buckets of the global
 * layer already admitted for this request are skipped.
 */
export async function admitOthers(svc: Services, buckets: BucketDescriptor[], headers: Headers, prior: RateView | null = null): Promise<RateView | null> {
  let rate = prior;
  const already = globalAdmitted.get(headers);
  if (already) {
    buckets = buckets.filter((b) => b.layer !== "global");
    rate = tighter(rate, already);
  }
  const byOwner = new Map<string, BucketDescriptor[]>();
  for (const b of buckets) {
    const list = byOwner.get(b.owner);
    if (list) list.push(b);
    else byOwner.set(b.owner, [b]);
  }
  const taken: { owner: string; specs: { id: string; limit: number; windowMs: number }[]; consumedAt: number }[] = [];
  for (const [owner, list] of byOwner) {
    const specs = list.map(({ id, limit, windowMs }) => ({ id, limit, windowMs }));
    const res = await svc.actors.ask(ipActor, owner, "admit", { buckets: specs });
    if (!res.allowed) {
      await Promise.all(taken.map((t) => svc.actors.ask(ipActor, t.owner, "release", { buckets: t.specs, consumedAt: t.consumedAt }).catch(() => null)));
      setRateHeaders(headers, res.rate);
      throw fail("rate_limit_exceeded", "Rate limit exceeded; wait until X-RateLimit-Reset.", { ...res.rate });
    }
    taken.push({ owner, specs, consumedAt: res.consumedAt });
    rate = tighter(rate, res.rate);
  }
  return rate;
}

/**
 * The tightest of `buckets` as they stand, consuming nothing: the X-RateLimit-* view for a request no layer counts
 * (MCP protocol messages other than tools/call and initialize, docs/access.md). Asks each owner once; an agent key's
 * buckets (owner `agent/<prefix>`) are asked of its actor, which the caller must have authenticated first.
 */
export async function peekBuckets(svc: Services, buckets: readonly BucketDescriptor[], opts: { timeoutMs?: number } = {}): Promise<RateView | null> {
  const ask = opts.timeoutMs === undefined ? undefined : { timeoutMs: opts.timeoutMs };
  const byOwner = new Map<string, { id: string; limit: number; windowMs: number }[]>();
  for (const { id, limit, windowMs, owner } of buckets) {
    const list = byOwner.get(owner);
    if (list) list.push({ id, limit, windowMs });
    else byOwner.set(owner, [{ id, limit, windowMs }]);
  }
  const views = await Promise.all(
    [...byOwner].map(([owner, specs]) =>
      owner.startsWith("agent/")
        ? svc.actors.ask(agentActor, owner.slice("agent/".length), "peek", { buckets: specs }, ask)
        : svc.actors.ask(ipActor, owner, "peek", { buckets: specs }, ask),
    ),
  );
  let rate: RateView | null = null;
  for (const v of views) rate = tighter(rate, v);
  return rate;
}

/** Per-IP (or per-user) admission for routes without an agent key: surface decides which layer applies. */
export async function admitAnonymous(svc: Services, surface: Surface, ip: string, headers: Headers, userId?: string): Promise<void> {
  if (!svc.config.RATE_LIMITS_ENABLED) return setStaticRateHeaders(headers, { surface, ip, userId: userId ?? null });
  const rate = await admitOthers(svc, bucketsFor({ surface, ip, userId: userId ?? null }), headers);
  setRateHeaders(headers, rate);
}

function isCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof ActorError && err.code === code;
}

/** A request without a usable key is counted like anonymous traffic on its surface (bounds key guessing). */
async function countAnonymous(svc: Services, req: { ip: string; headers: Headers; surface: Surface; toolName?: string }): Promise<void> {
  const ctx = { surface: req.surface, ip: req.ip, toolName: req.toolName ?? null };
  if (!svc.config.RATE_LIMITS_ENABLED) return setStaticRateHeaders(req.headers, ctx);
  setRateHeaders(req.headers, await admitOthers(svc, bucketsFor(ctx), req.headers));
}

/** One agent request as `authenticateAgent` sees it. */
export interface AgentRequest {
  request: Request;
  /**
   * The caller's address, or a function giving it: the address is then looked up only when a bucket of the request
   * depends on it. A keyed agentic REST request has none (limits.ts: its only bucket is the key's tier bucket), and
   * Bun's `server.requestIP` costs a few µs per call on the hot path (see `agentRequestAddress`).
   */
  ip: string | (() => string);
  headers: Headers;
  surface: Surface;
  checkRoute: boolean;
  toolName?: string;
  customerId?: string;
}

/** `authenticateAgentNow` as a promise (MCP and OAuth callers, which are asynchronous anyway). */
export async function authenticateAgent(svc: Services, req: AgentRequest): Promise<AgentPrincipal> {
  return authenticateAgentNow(svc, req);
}

/**
 * Authenticates and admits an agent request: one `authorize` message to the key's actor. When that actor is
 * hosted by this process and loaded, its answer is synchronous (`askNow`) and so is this function's — the principal
 * comes back as a value, a refusal is thrown at once; otherwise (another process over NATS, an activation still
 * loading, buckets held by other owners, a wrong key to count against the caller's address) it returns a promise.
 */
export function authenticateAgentNow(svc: Services, req: AgentRequest): AgentPrincipal | Promise<AgentPrincipal> {
  const raw = req.request.headers.get("x-agent-api-key");
  const prefix = parseAgentKey(raw);
  const limits = svc.config.RATE_LIMITS_ENABLED;
  let address = typeof req.ip === "string" ? req.ip : undefined;
  const ip = (): string => (address ??= (req.ip as () => string)());
  if (!prefix || !raw) return countedRefusal(svc, req, ip, fail("unauthorized", UNAUTHORIZED_KEY));
  // Only defined fields: this message is sent on every agent request.
  const body: MessageBody<typeof agentActor, "authorize"> = {
    hash: hashAgentKey(raw.trim(), pepper(svc)),
    method: req.request.method,
    path: req.checkRoute ? pathOf(req.request.url) : "",
    checkRoute: req.checkRoute,
  };
  // the address the actor derives buckets from: none of a keyed rest-agent request's buckets is per IP
  const limitsIp = address ?? (req.surface === "rest-agent" ? "" : ip());
  if (limits) {
    const l: NonNullable<typeof body.limits> = { surface: req.surface, ip: limitsIp };
    if (req.toolName !== undefined) l.toolName = req.toolName;
    if (req.customerId !== undefined) l.customerId = req.customerId;
    body.limits = l;
  }
  let result: AuthorizeReply;
  try {
    const answer = askNow(svc, agentActor, prefix, "authorize", body);
    if (answer instanceof Promise) {
      return answer.then(
        (r) => admitted(svc, req, prefix, limitsIp, r),
        (err: unknown) => refused(svc, req, ip, err),
      );
    }
    result = answer;
  } catch (err) {
    return refused(svc, req, ip, err);
  }
  return admitted(svc, req, prefix, limitsIp, result);
}

type AuthorizeReply = ReplyOf<typeof agentActor, "authorize">;

/** `svc.actors.askNow` where the caller has it, else `ask`. */
function askNow<D extends AnyActorDefinition, T extends MessageType<D>>(svc: Services, def: D, id: string, type: T, body: MessageBody<D, T>): ReplyOf<D, T> | Promise<ReplyOf<D, T>> {
  const actors = svc.actors;
  return actors.askNow ? actors.askNow(def, id, type, body) : actors.ask(def, id, type, body);
}

/** The key actor's refusal: rate headers for a 429; a wrong key is first counted like anonymous traffic. */
function refused(svc: Services, req: AgentRequest, ip: () => string, err: unknown): never | Promise<never> {
  const details = (err as { details?: RateView }).details;
  if (isCode(err, "rate_limit_exceeded") && details) setRateHeaders(req.headers, details);
  if (isCode(err, "unauthorized")) return countedRefusal(svc, req, ip, err);
  throw err;
}

/**
 * A request without a usable key is counted like anonymous traffic on its surface, then refused. The address is
 * read only now: a client that already hung up has none any more (Bun's requestIP gives null) and is counted with
 * every other departed client under "unknown" (docs/decisions.md, "Lazy client address").
 */
async function countedRefusal(svc: Services, req: AgentRequest, ip: () => string, err: unknown): Promise<never> {
  await countAnonymous(svc, { ...req, ip: ip() });
  throw err;
}

/** The key actor admitted the request: other owners' buckets (MCP layers), rate headers, the route's verdict. */
function admitted(svc: Services, req: AgentRequest, prefix: string, limitsIp: string, result: AuthorizeReply): AgentPrincipal | Promise<AgentPrincipal> {
  if (result.otherBuckets.length) return admittedWithOthers(svc, req, prefix, limitsIp, result);
  let rate: RateView | null = result.rate;
  if (globalAdmitted.has(req.headers)) rate = tighter(rate, globalAdmitted.get(req.headers)!);
  return principalOf(svc, req, prefix, limitsIp, result, rate);
}

async function admittedWithOthers(svc: Services, req: AgentRequest, prefix: string, limitsIp: string, result: AuthorizeReply): Promise<AgentPrincipal> {
  let rate: RateView | null;
  try {
    rate = await admitOthers(svc, [...result.otherBuckets], req.headers, result.rate);
  } catch (err) {
    if (result.consumedAt) {
      const l = { surface: req.surface, ip: limitsIp, toolName: req.toolName, customerId: req.customerId };
      await svc.actors.ask(agentActor, prefix, "release", { buckets: [], consumedAt: result.consumedAt, limits: l }).catch(() => null);
    }
    throw err;
  }
  return principalOf(svc, req, prefix, limitsIp, result, rate);
}

function principalOf(svc: Services, req: AgentRequest, prefix: string, limitsIp: string, result: AuthorizeReply, rate: RateView | null): AgentPrincipal {
  if (svc.config.RATE_LIMITS_ENABLED) setRateHeaders(req.headers, rate);
  else setStaticRateHeaders(req.headers, { surface: req.surface, ip: limitsIp, keyId: result.keyId, tier: result.tier, toolName: req.toolName ?? null });
  if (result.denied) throw ActorError.fromData(result.denied);
  // `scopes` is the reply's frozen array (authorize is an immutable message): shared, never to be changed
  return { keyId: result.keyId, prefix, userId: result.userId, scopes: result.scopes as Scope[], tier: result.tier, plan: result.plan };
}

/**
 * The caller's address for `authenticateAgent`, looked up only when a bucket needs it: a keyed agentic REST request
 * never does, a wrong key does after the key actor's answer — by then a client that hung up has no address and is
 * counted under "unknown" with every other departed client (docs/decisions.md, "Lazy client address").
 */
export function agentRequestAddress(_svc: Services, request: Request, server: Parameters<typeof clientIp>[1]): () => string {
  return () => clientIp(request, server);
}

/**
 * Agent requests whose admission already ran in the request hook (rate-limit.ts `admitAgentEarly`, before the body
 * is parsed or validated, so a request without a valid key gets 401/403/429, never a 400 about its body).
 */
const earlyAdmissions = new WeakMap<Request, AgentPrincipal | Promise<AgentPrincipal>>();

/** Starts (limits off) or runs (limits on, awaited by the caller) the admission of an agent route's request. */
export function admitAgentEarly(svc: Services, request: Request, headers: Headers, server: Parameters<typeof clientIp>[1]): AgentPrincipal | Promise<AgentPrincipal> {
  let admission: AgentPrincipal | Promise<AgentPrincipal>;
  try {
    admission = authenticateAgentNow(svc, { request, ip: agentRequestAddress(svc, request, server), headers, surface: "rest-agent", checkRoute: true });
  } catch (err) {
    admission = Promise.reject(err);
  }
  // a refusal is reported by whoever awaits it (the request hook, or the route's derive with limits off)
  if (admission instanceof Promise) admission.catch(() => {});
  earlyAdmissions.set(request, admission);
  return admission;
}

/**
 * Every route mounted after it needs `X-Agent-Api-Key`; routes receive `agent`. Routes in the access table were
 * admitted by the request hook already (`admitAgentEarly`); any other route using this plugin is admitted here, at
 * the transform stage, which still comes before body validation.
 */
export function agentAuth(svc: Services) {
  return new Elysia({ name: "agent-auth", seed: "rest" }).derive({ as: "scoped" }, async ({ request, set, server }) => {
    const agent = await (earlyAdmissions.get(request) ?? admitAgentEarly(svc, request, set.headers as Headers, server));
    return { agent };
  });
}

export async function verifyUserToken(svc: Services, authorization: string | null): Promise<UserPrincipal> {
  const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? "");
  if (!m) throw fail("unauthorized", "Missing bearer token (Authorization: Bearer <JWT> from POST /api/v1/auth/login).");
  const tokens = await tokenService(svc);
  const verified = await tokens.verifyToken(m[1], { audience: SESSION_AUDIENCE, typ: "JWT" });
  const role = verified.claims.role;
  const email = verified.claims.email;
  if ((role !== "operator" && role !== "merchant") || typeof email !== "string") throw fail("unauthorized", "Token is not a user session.");
  return { id: verified.sub, email, role };
}

/** One verification per request, shared by the global rate-limit plugin (per-user bucket) and `userAuth`. */
const sessionOf = new WeakMap<Request, Promise<UserPrincipal>>();

export function userFromRequest(svc: Services, request: Request): Promise<UserPrincipal> {
  let p = sessionOf.get(request);
  if (!p) {
    p = verifyUserToken(svc, request.headers.get("authorization"));
    p.catch(() => {});
    sessionOf.set(request, p);
  }
  return p;
}

/**
 * Routes mounted after it need `Authorization: Bearer <JWT>` and receive `user`. Checked at the transform stage,
 * before the body is validated: a caller without a session gets 401 whatever its body, and an unauthenticated
 * multi-megabyte body never reaches schema validation (review I: 134 ms of CPU for a 2 MiB invalid merchant body).
 */
export function userAuth(svc: Services) {
  return new Elysia({ name: "user-auth", seed: "rest" })
    .derive({ as: "scoped" }, async ({ request }) => {
      const user = await userFromRequest(svc, request);
      // Every /api/v1/admin route is the operator's: the role is checked here too, before the route's own transform
      // and its body or query schema, so a merchant learns nothing of an admin route's schema (audit W-1: 400
      // naming the allowed settings keys instead of 403; the agent side decided the same, REST audit M1). The
      // routes keep their requireOperator.
      if (isAdminPath(request.url)) requireOperator(user);
      return { user };
    })
    .onAfterResponse({ as: "scoped" }, ({ request, set, user }) => logOperatorAction(request, set.status, user));
}

/**
 * Every operator write (an /api/v1/admin route with a method other than GET, HEAD or OPTIONS) leaves a line naming
 * the operator, the route's path (ids included: which key was revoked, which user's plan was set; no query, no body)
 * and the status answered, with the request's id (helper F, session 20: plan changes, key revocations, search
 * settings and reindex, trust recompute and key rotation said nothing of who did them). One place for every admin
 * route, present and future. A refused attempt (403 for a merchant, whose derive threw before `user` existed) is the
 * request log's, not an operator action.
 */
function logOperatorAction(request: Request, status: number | string | undefined, user: UserPrincipal | undefined): void {
  if (user === undefined || user.role !== "operator" || !isAdminPath(request.url)) return;
  const method = request.method;
  if (method === "GET" || method === "HEAD" || method === "OPTIONS") return;
  log.info("operator action", { by: user.id, method, path: pathOf(request.url), status: typeof status === "number" ? status : 200 });
}

/** The path starts with /api/v1/admin/ (read from the URL without parsing it: this runs on every user request). */
function isAdminPath(url: string): boolean {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  return start >= 0 && url.startsWith("/api/v1/admin/", start);
}

export function requireOperator(user: UserPrincipal): void {
  if (user.role !== "operator") throw fail("forbidden", "Operator role required.");
}
