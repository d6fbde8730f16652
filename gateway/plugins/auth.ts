/**
 * Authentication and admission for the gateway.
 *
 * `agentAuth(svc)`: every route mounted after it needs `X-Agent-Api-Key`. One message to the key's actor
 * (`agent/<prefix>`) authenticates the key (constant-time hash compare), checks the route access table
 * (scope, SANDBOX, feature tier) and admits the key's rate-limit buckets; buckets owned by others (per IP)
 * are admitted next. Routes receive `agent: AgentPrincipal`.
 *
 * `userAuth(svc)`: `Authorization: Bearer <JWT>` from POST /auth/login; routes receive `user: UserPrincipal`.
 */
import { Elysia } from "elysia";
import { agentActor } from "../../actors/agent/index.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { hashAgentKey, parseAgentKey } from "../../actors/agent/keys.ts";
import { bucketsFor, type BucketDescriptor, type Surface } from "../../actors/agent/limits.ts";
import type { RateView } from "../../actors/agent/messages.ts";
import type { Scope, Tier } from "../../actors/agent/access.ts";
import { fail } from "../../actors/runtime/errors.ts";
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

export function setRateHeaders(headers: Headers, rate: RateView | null | undefined): void {
  if (!rate) return;
  headers["x-ratelimit-limit"] = String(rate.limit);
  headers["x-ratelimit-remaining"] = String(rate.remaining);
  headers["x-ratelimit-reset"] = String(rate.reset);
  if (rate.retryAfter !== undefined) headers["retry-after"] = String(rate.retryAfter);
}

/** The tighter of two bucket views (fewer remaining wins). */
function tighter(a: RateView | null, b: RateView | null): RateView | null {
  if (!a) return b;
  if (!b) return a;
  return b.remaining < a.remaining ? b : a;
}

export function clientIp(request: Request, server: { requestIP(r: Request): { address: string } | null } | null): string {
  return server?.requestIP(request)?.address ?? "unknown";
}

/** Admits buckets held by ip/user/customer actors; throws rate_limit_exceeded (headers set) on refusal. */
export async function admitOthers(svc: Services, buckets: BucketDescriptor[], headers: Headers, prior: RateView | null = null): Promise<RateView | null> {
  let rate = prior;
  const byOwner = new Map<string, BucketDescriptor[]>();
  for (const b of buckets) byOwner.set(b.owner, [...(byOwner.get(b.owner) ?? []), b]);
  for (const [owner, list] of byOwner) {
    const res = await svc.actors.ask(ipActor, owner, "admit", { buckets: list.map(({ id, limit, windowMs }) => ({ id, limit, windowMs })) });
    if (!res.allowed) {
      setRateHeaders(headers, res.rate);
      throw fail("rate_limit_exceeded", "Rate limit exceeded; wait until X-RateLimit-Reset.", { ...res.rate });
    }
    rate = tighter(rate, res.rate);
  }
  return rate;
}

/** Per-IP (or per-user) admission for routes without an agent key: surface decides which layer applies. */
export async function admitAnonymous(svc: Services, surface: Surface, ip: string, headers: Headers, userId?: string): Promise<void> {
  if (!svc.config.RATE_LIMITS_ENABLED) return;
  const rate = await admitOthers(svc, bucketsFor({ surface, ip, userId: userId ?? null }), headers);
  setRateHeaders(headers, rate);
}

export async function authenticateAgent(
  svc: Services,
  req: { request: Request; ip: string; headers: Headers; surface: Surface; checkRoute: boolean; toolName?: string; delegated?: boolean },
): Promise<AgentPrincipal> {
  const raw = req.request.headers.get("x-agent-api-key");
  const prefix = parseAgentKey(raw);
  const limits = svc.config.RATE_LIMITS_ENABLED;
  if (!prefix || !raw) {
    // key-guessing traffic is bounded per IP
    if (limits) await admitOthers(svc, bucketsFor({ surface: req.surface, ip: req.ip }), req.headers);
    throw fail("unauthorized", "Missing or invalid API key (header X-Agent-Api-Key, format agnt_...).");
  }
  const url = new URL(req.request.url);
  const result = await svc.actors.ask(agentActor, prefix, "authorize", {
    hash: hashAgentKey(raw.trim(), pepper(svc)),
    method: req.request.method,
    path: url.pathname,
    checkRoute: req.checkRoute,
    delegated: req.delegated,
    limits: limits ? { surface: req.surface, ip: req.ip, toolName: req.toolName } : undefined,
  }).catch((err) => {
    const details = (err as { details?: RateView }).details;
    if ((err as { code?: string }).code === "rate_limit_exceeded" && details) setRateHeaders(req.headers, details);
    throw err;
  });
  const rate = await admitOthers(svc, result.otherBuckets, req.headers, result.rate);
  setRateHeaders(req.headers, rate);
  return {
    keyId: result.key.id,
    prefix,
    userId: result.key.userId,
    scopes: result.key.scopes as Scope[],
    tier: result.key.tier as Tier,
  };
}

export function agentAuth(svc: Services) {
  return new Elysia({ name: "agent-auth", seed: "rest" }).resolve({ as: "scoped" }, async ({ request, set, server }) => {
    const agent = await authenticateAgent(svc, {
      request,
      ip: clientIp(request, server),
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
  const verified = await tokens.verifyToken(m[1], { audience: SESSION_AUDIENCE });
  const role = verified.claims.role;
  const email = verified.claims.email;
  if ((role !== "operator" && role !== "merchant") || typeof email !== "string") throw fail("unauthorized", "Token is not a user session.");
  return { id: verified.sub, email, role };
}

export function userAuth(svc: Services) {
  return new Elysia({ name: "user-auth", seed: "rest" }).resolve({ as: "scoped" }, async ({ request }) => ({
    user: await verifyUserToken(svc, request.headers.get("authorization")),
  }));
}

export function requireOperator(user: UserPrincipal): void {
  if (user.role !== "operator") throw fail("forbidden", "Operator role required.");
}
