/**
 * Authentication and admission for the gateway.
 *
 * `agentAuth(svc)`: every route mounted after it needs `X-Agent-Api-Key`. One message to the key's actor
 * (`agent/<prefix>`) authenticates the key (constant-time hash compare), admits the key's rate-limit buckets and
 * checks the route access table (scope, SANDBOX, feature tier); buckets owned by others (per IP) are admitted
 * next. Routes receive `agent: AgentPrincipal`. A request without a valid key is counted per IP, so guessing keys
 * is bounded and even a 401 carries rate headers.
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
import { bucketsFor, type BucketDescriptor, type LimitContext, type Surface } from "../../actors/agent/limits.ts";
import type { RateView } from "../../actors/agent/messages.ts";
import type { Scope, Tier } from "../../actors/agent/access.ts";
import { ActorError, fail, type ErrorCode } from "../../actors/runtime/errors.ts";
import type { MessageBody } from "../../actors/runtime/define-actor.ts";
import { pepper, SESSION_AUDIENCE, tokenService } from "../identity.ts";
import type { Services } from "../services.ts";

export interface AgentPrincipal {
  keyId: string;
  prefix: string;
  userId: string;
  scopes: Scope[];
  tier: Tier;
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

/**
 * `ip` may be a function (e.g. `() => clientIp(request, server)`): the address is then looked up only when a bucket
 * of the request depends on it. A keyed agentic REST request has none (limits.ts: its only bucket is the key's tier
 * bucket), and Bun's `server.requestIP` costs a few µs per call on the hot path. Pass a function only when nothing
 * will be counted against the address after an await (limits off): a client that hangs up loses its address.
 */
export async function authenticateAgent(
  svc: Services,
  req: { request: Request; ip: string | (() => string); headers: Headers; surface: Surface; checkRoute: boolean; toolName?: string; delegated?: boolean; customerId?: string },
): Promise<AgentPrincipal> {
  const raw = req.request.headers.get("x-agent-api-key");
  const prefix = parseAgentKey(raw);
  const limits = svc.config.RATE_LIMITS_ENABLED;
  let address = typeof req.ip === "string" ? req.ip : undefined;
  const ip = (): string => (address ??= (req.ip as () => string)());
  if (!prefix || !raw) {
    await countAnonymous(svc, { ...req, ip: ip() });
    throw fail("unauthorized", UNAUTHORIZED_KEY);
  }
  // Only defined fields: this message crosses the bus on every agent request.
  const body: MessageBody<typeof agentActor, "authorize"> = {
    hash: hashAgentKey(raw.trim(), pepper(svc)),
    method: req.request.method,
    path: req.checkRoute ? pathOf(req.request.url) : "",
    checkRoute: req.checkRoute,
  };
  if (req.delegated !== undefined) body.delegated = req.delegated;
  // the address the actor derives buckets from: none of a keyed rest-agent request's buckets is per IP
  const limitsIp = address ?? (req.surface === "rest-agent" ? "" : ip());
  if (limits) {
    const l: NonNullable<typeof body.limits> = { surface: req.surface, ip: limitsIp };
    if (req.toolName !== undefined) l.toolName = req.toolName;
    if (req.customerId !== undefined) l.customerId = req.customerId;
    body.limits = l;
  }
  let result;
  try {
    result = await svc.actors.ask(agentActor, prefix, "authorize", body);
  } catch (err) {
    const details = (err as { details?: RateView }).details;
    if (isCode(err, "rate_limit_exceeded") && details) setRateHeaders(req.headers, details);
    if (isCode(err, "unauthorized")) await countAnonymous(svc, { ...req, ip: ip() });
    throw err;
  }
  let rate: RateView | null = result.rate;
  if (result.otherBuckets.length) {
    try {
      rate = await admitOthers(svc, result.otherBuckets, req.headers, result.rate);
    } catch (err) {
      if (result.consumedAt) {
        const l = { surface: req.surface, ip: limitsIp, toolName: req.toolName, customerId: req.customerId };
        await svc.actors.ask(agentActor, prefix, "release", { buckets: [], consumedAt: result.consumedAt, limits: l }).catch(() => null);
      }
      throw err;
    }
  } else if (globalAdmitted.has(req.headers)) rate = tighter(rate, globalAdmitted.get(req.headers)!);
  if (limits) setRateHeaders(req.headers, rate);
  else setStaticRateHeaders(req.headers, { surface: req.surface, ip: limitsIp, keyId: result.keyId, tier: result.tier, toolName: req.toolName ?? null });
  if (result.denied) throw ActorError.fromData(result.denied);
  return { keyId: result.keyId, prefix, userId: result.userId, scopes: result.scopes as Scope[], tier: result.tier };
}

/**
 * The caller's address for `authenticateAgent`. With limits on, a wrong key is counted against it after the key
 * actor's answer; by then a client that hung up has no address any more (Bun's requestIP gives null), so it is read
 * before any await. With limits off nothing is counted and the lookup waits until a header needs it.
 */
export function agentRequestAddress(svc: Services, request: Request, server: Parameters<typeof clientIp>[1]): string | (() => string) {
  return svc.config.RATE_LIMITS_ENABLED ? clientIp(request, server) : () => clientIp(request, server);
}

export function agentAuth(svc: Services) {
  return new Elysia({ name: "agent-auth", seed: "rest" }).resolve({ as: "scoped" }, async ({ request, set, server }) => {
    const agent = await authenticateAgent(svc, {
      request,
      ip: agentRequestAddress(svc, request, server),
      headers: set.headers as Headers,
      surface: "rest-agent",
      checkRoute: true,
    });
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

export function userAuth(svc: Services) {
  return new Elysia({ name: "user-auth", seed: "rest" }).resolve({ as: "scoped" }, async ({ request }) => ({
    user: await userFromRequest(svc, request),
  }));
}

export function requireOperator(user: UserPrincipal): void {
  if (user.role !== "operator") throw fail("forbidden", "Operator role required.");
}
