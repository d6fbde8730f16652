/**
 * The spec's rate-limit layers as data, and `bucketsFor(ctx)`: which buckets one request must pass.
 *
 * Every descriptor names the actor that holds it (`owner`): buckets of a keyed caller live in `agent/<keyId>`,
 * per-IP buckets in `ip/<addr>`, the per-user global bucket of a JWT caller in `user/<userId>` and the MCP
 * customer bucket in `customer/<customerId>`. Each owner admits its group atomically (buckets.ts `admit`); when a
 * request spans two owners the gateway admits them in order and `release`s the first if the second refuses.
 *
 * Readings of the spec that are ours (docs/access.md explains them):
 * - The global 500 / 15 min layer is not applied to keyed agentic REST or to the dedicated MCP endpoints: their
 *   own limits (up to 10000/min and 1000–1500/min) would otherwise be unreachable. It applies everywhere else,
 *   and to agentic REST requests that carry no key (so key-guessing traffic is bounded per IP).
 * - On the store MCP endpoint a caller without a key is limited per IP at the STARTER per-key value (30/min).
 * - SANDBOX: 60/min on agentic REST, the STARTER bucket on MCP.
 */
import type { Tier } from "./access.ts";
import { formatIPv6, normalizeIp, parseIp } from "../../infra/ssrf.ts";

export const MINUTE_MS = 60_000;

export type Surface =
  | "rest-agent"
  | "mcp"
  | "mcp-discovery"
  | "mcp-customer"
  | "mcp-checkout"
  | "demo-mcp"
  | "public-rest"
  | "other";

export type BucketOwner = `agent/${string}` | `ip/${string}` | `user/${string}` | `customer/${string}` | `login/${string}`;

export type LimitLayer =
  | "global"
  | "mcp-key"
  | "mcp-tool"
  | "mcp-discovery"
  | "mcp-customer"
  | "mcp-checkout"
  | "mcp-dedicated-agent"
  | "demo"
  | "rest-tier"
  | "public"
  | "login"
  | "oauth-register";

export interface BucketDescriptor {
  id: string;
  limit: number;
  windowMs: number;
  owner: BucketOwner;
  layer: LimitLayer;
}

export interface LimitContext {
  surface: Surface;
  /** Agent key id when the request carries a valid key. */
  keyId?: string | null;
  /** The key's tier; null/absent for keys without a tier (store MCP keys) or anonymous callers. */
  tier?: Tier | null;
  ip: string;
  /** Authenticated user (JWT bearer), for the global layer. */
  userId?: string | null;
  /** Authenticated end customer on the MCP customer endpoint. */
  customerId?: string | null;
  /** MCP tool being called, for the per-tool layer. */
  toolName?: string | null;
}

// ------------------------------------------------------------------------------------------- the tables

/** Layer 1: MCP per key. What each plan is configured for, and what is actually in force (30 for everyone). */
export const MCP_PER_KEY_CONFIGURED: Readonly<Record<Tier, number>> = {
  STARTER: 30,
  GROWTH: 200,
  PRO: 1000,
  ENTERPRISE: 5000,
  SANDBOX: 30,
};
export const MCP_PER_KEY_IN_FORCE = 30;

/** Layer 2: MCP per tool, per minute, in addition to the per-key bucket. */
export const MCP_TOOL_LIMITS: Readonly<Record<string, number>> = {
  search_products: 20,
  search_products_enriched: 15,
  complete_checkout: 10,
  create_cart: 20,
  ucp_create_checkout: 20,
};

/** Layer 3. */
export const GLOBAL_LIMIT = { limit: 500, windowMs: 15 * MINUTE_MS } as const;
export const MCP_DEDICATED_LIMITS = {
  discoveryPerIp: 1000,
  customerPerCustomer: 200,
  checkoutPerAgent: 60,
  allThreePerAgent: 1500,
} as const;
export const DEMO_STORE_PER_IP = 20;
export const REST_AGENT_PER_TIER: Readonly<Record<Tier, number>> = {
  STARTER: 100,
  GROWTH: 500,
  PRO: 2000,
  ENTERPRISE: 10000,
  SANDBOX: 60,
};
export const PUBLIC_REST_PER_IP = 30;

/**
 * Password logins (POST /api/v1/auth/login, the OAuth consent form's "allow", POST /dashboard/login), one bucket
 * shared by the three: per client address, and per e-mail address so that guessing one account's password from
 * many addresses is bounded too. The per-e-mail limit is above the per-address one, so a single address cannot
 * lock someone else out of password log-in. A successful log-in gives its units back (login.ts): the buckets
 * bound guessing, not signing in. An attempt from a browser or address the account signed in from before passes
 * a full per-e-mail bucket (login.ts, known devices), so guessers cannot lock the owner out.
 * The limits are configuration (LOGIN_LIMIT_PER_IP = 30, LOGIN_LIMIT_PER_EMAIL = 100 by default); the window is not.
 */
export const LOGIN_WINDOW_MS = 15 * MINUTE_MS;

/**
 * OAuth dynamic client registration (POST /api/v1/oauth/register, RFC 7591), per client address: it needs no account
 * and every registration stores a client row, so this bounds what one address can store (audit W-1); the global
 * 500 / 15 min alone let it store about 1 GB a day. A real MCP client registers once per install. Counted only for
 * registrations that are stored (a refused body costs the global bucket only), and durable like the log-in
 * buckets (the owner writes the count before answering), so neither waiting for an idle activation to go nor a
 * restart refills it.
 */
export const OAUTH_REGISTER_PER_IP = { limit: 20, windowMs: 60 * MINUTE_MS } as const;

export interface LoginLimits {
  perIp: number;
  perEmail: number;
}

/** The plan value of the MCP per-key layer, for dashboards ("configured 1000/min, 30/min in force"). */
export function mcpConfiguredLimit(tier: Tier | null | undefined): number {
  return MCP_PER_KEY_CONFIGURED[tier ?? "STARTER"];
}

// ------------------------------------------------------------------------------------------- identities

/**
 * The bucket key for a client address: IPv4 (and IPv4-mapped IPv6) as the address, IPv6 as its /64, because one
 * subscriber usually gets a whole /64 and could otherwise rotate through 2^64 fresh buckets.
 */
export function ipBucketKey(ip: string): string {
  const parsed = parseIp(ip);
  const normalized = normalizeIp(ip);
  if (!parsed || !normalized) return ip.trim().toLowerCase() || "unknown";
  if (!normalized.includes(":")) return normalized;
  const b = parsed.bytes.slice();
  b.fill(0, 8);
  return `${formatIPv6(b)}/64`;
}

// -------------------------------------------------------------------------------------------- selection

const DEDICATED: ReadonlySet<Surface> = new Set(["mcp-discovery", "mcp-customer", "mcp-checkout"]);
const MCP_SURFACES: ReadonlySet<Surface> = new Set(["mcp", "demo-mcp", "mcp-discovery", "mcp-customer", "mcp-checkout"]);

/** The buckets a request must pass, all of them. Never empty. */
export function bucketsFor(ctx: LimitContext): BucketDescriptor[] {
  const ip = ipBucketKey(ctx.ip);
  const keyId = ctx.keyId ?? null;
  const ipOwner: BucketOwner = `ip/${ip}`;
  const agentOwner: BucketOwner | null = keyId ? `agent/${keyId}` : null;
  const out: BucketDescriptor[] = [];
  const add = (id: string, limit: number, windowMs: number, owner: BucketOwner, layer: LimitLayer) =>
    out.push({ id, limit, windowMs, owner, layer });

  // Global: per authenticated principal (key, else user), else per IP.
  const globalApplies = !DEDICATED.has(ctx.surface) && !(ctx.surface === "rest-agent" && keyId);
  if (globalApplies) {
    if (keyId) add(`key:${keyId}:global`, GLOBAL_LIMIT.limit, GLOBAL_LIMIT.windowMs, agentOwner!, "global");
    else if (ctx.userId) {
      add(`user:${ctx.userId}:global`, GLOBAL_LIMIT.limit, GLOBAL_LIMIT.windowMs, `user/${ctx.userId}`, "global");
    } else add(`ip:${ip}:global`, GLOBAL_LIMIT.limit, GLOBAL_LIMIT.windowMs, ipOwner, "global");
  }

  switch (ctx.surface) {
    case "rest-agent":
      if (keyId) add(`key:${keyId}:rest`, REST_AGENT_PER_TIER[ctx.tier ?? "STARTER"], MINUTE_MS, agentOwner!, "rest-tier");
      break;
    case "mcp":
      if (keyId) add(`key:${keyId}:mcp`, MCP_PER_KEY_IN_FORCE, MINUTE_MS, agentOwner!, "mcp-key");
      else add(`ip:${ip}:mcp`, MCP_PER_KEY_IN_FORCE, MINUTE_MS, ipOwner, "mcp-key");
      break;
    case "demo-mcp":
      add(`ip:${ip}:demo`, DEMO_STORE_PER_IP, MINUTE_MS, ipOwner, "demo");
      break;
    case "mcp-discovery":
      add(`ip:${ip}:mcp-discovery`, MCP_DEDICATED_LIMITS.discoveryPerIp, MINUTE_MS, ipOwner, "mcp-discovery");
      break;
    case "mcp-customer":
      if (ctx.customerId) {
        add(
          `customer:${ctx.customerId}:mcp-customer`,
          MCP_DEDICATED_LIMITS.customerPerCustomer,
          MINUTE_MS,
          `customer/${ctx.customerId}`,
          "mcp-customer",
        );
      } else {
        add(`ip:${ip}:mcp-customer`, MCP_DEDICATED_LIMITS.customerPerCustomer, MINUTE_MS, ipOwner, "mcp-customer");
      }
      break;
    case "mcp-checkout":
      if (keyId) add(`key:${keyId}:mcp-checkout`, MCP_DEDICATED_LIMITS.checkoutPerAgent, MINUTE_MS, agentOwner!, "mcp-checkout");
      else add(`ip:${ip}:mcp-checkout`, MCP_DEDICATED_LIMITS.checkoutPerAgent, MINUTE_MS, ipOwner, "mcp-checkout");
      break;
    case "public-rest":
      add(`ip:${ip}:public`, PUBLIC_REST_PER_IP, MINUTE_MS, ipOwner, "public");
      break;
    case "other":
      break;
  }

  // The agent-wide cap across the three dedicated endpoints (only meaningful for an identified agent).
  if (DEDICATED.has(ctx.surface) && keyId) {
    add(`key:${keyId}:mcp-dedicated`, MCP_DEDICATED_LIMITS.allThreePerAgent, MINUTE_MS, agentOwner!, "mcp-dedicated-agent");
  }

  // Per-tool limits on every MCP surface, per key, or per IP for anonymous callers.
  const tool = ctx.toolName ?? null;
  if (MCP_SURFACES.has(ctx.surface) && tool && Object.prototype.hasOwnProperty.call(MCP_TOOL_LIMITS, tool)) {
    const limit = MCP_TOOL_LIMITS[tool]!;
    if (keyId) add(`key:${keyId}:tool:${tool}`, limit, MINUTE_MS, agentOwner!, "mcp-tool");
    else add(`ip:${ip}:tool:${tool}`, limit, MINUTE_MS, ipOwner, "mcp-tool");
  }

  if (out.length === 0) add(`ip:${ip}:global`, GLOBAL_LIMIT.limit, GLOBAL_LIMIT.windowMs, ipOwner, "global");
  return out;
}

/**
 * The log-in buckets of one attempt: per address, then (when the e-mail is known) per e-mail. The e-mail is keyed
 * by a digest so bucket ids and actor ids never carry it. Address first: a refused address touches no e-mail actor,
 * so random e-mails from one address cannot create actors beyond its own limit.
 */
export function loginBuckets(limits: LoginLimits, ip: string, emailDigest?: string): BucketDescriptor[] {
  const key = ipBucketKey(ip);
  const out: BucketDescriptor[] = [{ id: `ip:${key}:login`, limit: limits.perIp, windowMs: LOGIN_WINDOW_MS, owner: `ip/${key}`, layer: "login" }];
  if (emailDigest) out.push({ id: `login:${emailDigest}`, limit: limits.perEmail, windowMs: LOGIN_WINDOW_MS, owner: `login/${emailDigest}`, layer: "login" });
  return out;
}

/** The OAuth client registration bucket of a client address (OAUTH_REGISTER_PER_IP). */
export function oauthRegisterBucket(ip: string): BucketDescriptor {
  const key = ipBucketKey(ip);
  return { id: `ip:${key}:oauth-register`, ...OAUTH_REGISTER_PER_IP, owner: `ip/${key}`, layer: "oauth-register" };
}

/** Groups descriptors by owning actor, preserving order (what the gateway sends to each actor's `admit`). */
export function groupByOwner(buckets: readonly BucketDescriptor[]): Map<BucketOwner, BucketDescriptor[]> {
  const groups = new Map<BucketOwner, BucketDescriptor[]>();
  for (const b of buckets) {
    const g = groups.get(b.owner);
    if (g) g.push(b);
    else groups.set(b.owner, [b]);
  }
  return groups;
}
