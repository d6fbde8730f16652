/**
 * `agent/<keyPrefix>`: one activation per agent API key, addressed by the key's non-secret lookup prefix so a
 * request can reach it before anything else is known. It owns the key record (revocation is seen at once by
 * every gateway, because there is exactly one owner), the key's rate-limit buckets (in memory: no write or await
 * on an admitted request; a clean stop hands them over to the next activation, which loads them, and a kill -9 may
 * refill them: actors/ip/stored-buckets.ts, docs/access.md) and, later, the key's wallet.
 */
import { timingSafeEqual } from "node:crypto";
import { defineActor } from "../runtime/define-actor.ts";
import { ActorError, fail, type ErrorData } from "../runtime/errors.ts";
import { assertKeyActive, checkAccess, keyExpiresAt, normalizeTier, type Tier } from "./access.ts";
import { BucketTable, type AdmitResult, type BucketSpec } from "./buckets.ts";
import { bucketsFor, type BucketDescriptor, type Surface } from "./limits.ts";
import { Admit, Authorize, CapPlan, CreateKey, Release, type KeyView, type RateView } from "./messages.ts";
import { assertKeyRoom, assertTierInPlan, capTier, keyPlanOf, storedPlan, type Plan } from "./plans.ts";
import { Type as T } from "@sinclair/typebox";
import { handOverOnStop } from "../runtime/host.ts";
import { catchUpBuckets, handOverBuckets, loadStoredBuckets } from "../ip/stored-buckets.ts";

interface KeyRecord extends KeyView {
  hash: string;
}

interface AgentState {
  loaded: boolean;
  key: KeyRecord | null;
}

/** What an activation keeps in memory besides its state (one Map lookup per message instead of several). */
interface AgentMemory {
  /** The key's rate-limit buckets (in memory; handed over on a clean stop: see the top of this file). */
  table: BucketTable;
  splits: Map<string, BucketSplit>;
  /** The split of the previous request: a key's traffic nearly always comes from one surface and address. */
  lastSplit: BucketSplit | null;
  /** The stored hash as the bytes `sameHash` compares, for the hash text it was made from. */
  storedHash: { text: string; bytes: Buffer } | null;
  /** The key's tier as stored and normalised (a string scan per request otherwise). */
  tier: { text: string; tier: Tier } | null;
  /** A frozen copy of the key's scopes, shared by every `authorize` reply (an immutable message). */
  scopes: { of: string[]; frozen: readonly string[] } | null;
}

interface BucketSplit {
  tier: Tier;
  surface: string;
  ip: string;
  toolName: string | undefined;
  customerId: string | undefined;
  mine: BucketSpec[];
  /** Frozen: handed to the gateway by reference in every `authorize` reply. */
  others: readonly BucketDescriptor[];
}

function agentMemory(memory: Map<string, unknown>): AgentMemory {
  let m = memory.get("agent") as AgentMemory | undefined;
  if (!m) memory.set("agent", (m = { table: new BucketTable(), splits: new Map(), lastSplit: null, storedHash: null, tier: null, scopes: null }));
  return m;
}

/**
 * Which buckets of a request this key holds and which belong to other owners, per (tier, surface, ip, tool,
 * customer), memoised in the activation: the answer never changes for the same inputs, and working it out
 * (IP normalisation included) costs more than the admission itself on the hot path.
 */
function bucketSplit(
  mem: AgentMemory,
  keyId: string,
  tier: Tier,
  l: { surface: string; ip: string; toolName?: string; customerId?: string },
): BucketSplit {
  const last = mem.lastSplit;
  if (last && last.tier === tier && last.surface === l.surface && last.ip === l.ip && last.toolName === l.toolName && last.customerId === l.customerId) {
    return last;
  }
  const k = `${tier}|${l.surface}|${l.ip}|${l.toolName ?? ""}|${l.customerId ?? ""}`;
  let hit = mem.splits.get(k);
  if (!hit) {
    const all = bucketsFor({ surface: l.surface as Surface, keyId, tier, ip: l.ip, toolName: l.toolName ?? null, customerId: l.customerId ?? null });
    const owner = ownerOf(keyId);
    hit = {
      tier,
      surface: l.surface,
      ip: l.ip,
      toolName: l.toolName,
      customerId: l.customerId,
      mine: all.filter((b) => b.owner === owner).map(({ id, limit, windowMs }) => ({ id, limit, windowMs })),
      others: Object.freeze(all.filter((b) => b.owner !== owner).map((b) => Object.freeze(b))),
    };
    if (mem.splits.size >= 256) mem.splits.clear();
    mem.splits.set(k, hit);
  }
  mem.lastSplit = hit;
  return hit;
}

export function rateView(r: AdmitResult): RateView {
  return r.allowed
    ? { limit: r.tightest.limit, remaining: r.tightest.remaining, reset: r.tightest.reset }
    : { limit: r.tightest.limit, remaining: 0, reset: r.tightest.reset, retryAfter: r.retryAfter };
}

function view(k: KeyRecord): KeyView {
  const { hash: _hash, ...rest } = k;
  return rest;
}

const HASH_LENGTH = 64;
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** Compared against when there is no key (or a malformed presented hash), so the timing is the same. */
const NO_HASH = Buffer.alloc(HASH_LENGTH, "0");
/** The presented hash's bytes; a handler runs synchronously up to the compare, so one buffer serves every turn. */
const presented = Buffer.alloc(HASH_LENGTH);

function keyTier(mem: AgentMemory, stored: string): Tier {
  if (mem.tier?.text !== stored) mem.tier = { text: stored, tier: normalizeTier(stored) };
  return mem.tier.tier;
}

/** The plan a key is capped at, as stored; a value that is not a plan caps at the lowest (fail closed). */
function keyPlan(stored: string | null): Plan | null {
  if (stored === null) return null;
  return storedPlan(stored);
}

function sharedScopes(mem: AgentMemory, scopes: string[]): readonly string[] {
  if (mem.scopes?.of !== scopes) mem.scopes = { of: scopes, frozen: Object.freeze([...scopes]) };
  return mem.scopes.frozen;
}

function storedHashBytes(mem: AgentMemory, hash: string): Buffer {
  if (mem.storedHash?.text !== hash) {
    // a malformed stored hash becomes bytes no well-formed presented hash can equal (still compared in full)
    const bytes = SHA256_HEX.test(hash) ? Buffer.from(hash, "latin1") : Buffer.alloc(HASH_LENGTH, "x");
    mem.storedHash = { text: hash, bytes };
  }
  return mem.storedHash.bytes;
}

/** Constant-time compare of the presented HMAC (hex) with the stored one; a malformed presented hash never matches. */
function sameHash(presentedHex: string, stored: Buffer): boolean {
  const wellFormed = SHA256_HEX.test(presentedHex);
  presented.write(wellFormed ? presentedHex : "0".repeat(HASH_LENGTH), "latin1");
  return timingSafeEqual(presented, stored) && wellFormed;
}

/** The key's owner name in the bucket descriptors (limits.ts) and in stored buckets. */
const ownerOf = (prefix: string) => `agent/${prefix}`;

export const agentActor = defineActor({
  kind: "agent",
  initialState: (): AgentState => ({ loaded: false, key: null }),
  async onActivate(ctx) {
    // what a clean stop of the previous owner handed over (memory only otherwise: nothing is read per request)
    await loadStoredBuckets(ctx.sql, ownerOf(ctx.id), agentMemory(ctx.memory).table, ctx.log);
    // A state saved before keys carried their plan (migration 0016) is read again from the row, which has it.
    if (ctx.state.loaded && (ctx.state.key === null || ctx.state.key.plan !== undefined)) return;
    const rows = await ctx.sql<
      { id: string; user_id: string; name: string; key_hash: string; scopes: string[]; tier: string; plan: string | null; created_at: Date; expires_at: Date | null; revoked_at: Date | null }[]
    >`SELECT id, user_id, name, key_hash, scopes, tier, plan, created_at, expires_at, revoked_at FROM agent_keys WHERE prefix = ${ctx.id}`;
    const r = rows[0];
    ctx.state = {
      loaded: true,
      key: r
        ? {
            id: r.id,
            prefix: ctx.id,
            userId: r.user_id,
            name: r.name,
            hash: r.key_hash,
            scopes: r.scopes,
            tier: r.tier,
            plan: r.plan,
            createdAt: r.created_at.toISOString(),
            expiresAt: r.expires_at?.toISOString() ?? null,
            revokedAt: r.revoked_at?.toISOString() ?? null,
          }
        : null,
    };
  },
  messages: {
    create: CreateKey,
    authorize: Authorize,
    admit: Admit,
    peek: Admit,
    release: Release,
    get: T.Object({}),
    revoke: T.Object({ userId: T.String() }),
    capPlan: CapPlan,
  },
  handlers: {
    async create(ctx, m) {
      if (ctx.state.key) throw fail("conflict", "key prefix collision; retry");
      const tier = normalizeTier(m.tier);
      const tx = await ctx.tx();
      // The account's row locked for the turn: two mints of one account, or a mint and a plan change
      // (PUT /api/v1/admin/users/plan locks it too), take turns, so the count and the plan read here still hold
      // when the key is stored.
      const [user] = await tx<{ role: "operator" | "merchant"; plan: string }[]>`SELECT role, plan FROM users WHERE id = ${m.userId} FOR UPDATE`;
      if (!user) throw fail("unauthorized", "The account of this session no longer exists.");
      const plan = storedPlan(user.plan);
      assertTierInPlan(user.role, plan, tier);
      if (user.role !== "operator") {
        const [live] = await tx<{ n: number }[]>`
          SELECT count(*)::int AS n FROM agent_keys
          WHERE user_id = ${m.userId} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${new Date(ctx.now())})`;
        assertKeyRoom(live?.n ?? 0, m.maxLiveKeys);
      }
      const keyPlanValue = keyPlanOf(user.role, plan);
      // One instant for both timestamps (audit S-6): created_at used to be the database's now() and expires_at the
      // gateway's clock read before the mint, so a sandbox key lived a few milliseconds (or any clock skew) less than
      // 24 h. The actor's clock is the one assertKeyActive compares expires_at with.
      const createdAt = new Date(ctx.now());
      const expiresAt = keyExpiresAt(tier, createdAt);
      const [row] = await tx<{ created_at: Date }[]>`
        INSERT INTO agent_keys (id, user_id, name, prefix, key_hash, scopes, tier, plan, created_at, expires_at)
        VALUES (${m.id}, ${m.userId}, ${m.name}, ${ctx.id}, ${m.hash}, ${m.scopes}, ${tier}, ${keyPlanValue}, ${createdAt}, ${expiresAt})
        RETURNING created_at`;
      ctx.state.key = {
        id: m.id,
        prefix: ctx.id,
        userId: m.userId,
        name: m.name,
        hash: m.hash,
        scopes: m.scopes,
        tier,
        plan: keyPlanValue,
        createdAt: row.created_at.toISOString(),
        expiresAt: expiresAt?.toISOString() ?? null,
        revokedAt: null,
      };
      return view(ctx.state.key);
    },

    /**
     * Authenticates, admits this key's buckets and checks the route's scope/tier rules, in one turn. Admission
     * comes before the route check so a refused call (403) still counts against the key's limits and carries
     * rate headers; the refusal is returned as `denied` (not thrown) so the gateway can still set them.
     */
    authorize(ctx, m) {
      const key = ctx.state.key;
      const mem = agentMemory(ctx.memory);
      // Compare even when there is no key, so timing does not reveal which prefixes exist.
      const matches = sameHash(m.hash, key ? storedHashBytes(mem, key.hash) : NO_HASH);
      if (!key || !matches) throw fail("unauthorized", "Missing or invalid API key (header X-Agent-Api-Key, format agnt_...).");
      if (key.expiresAt || key.revokedAt) {
        assertKeyActive(
          { expiresAt: key.expiresAt ? new Date(key.expiresAt) : null, revokedAt: key.revokedAt ? new Date(key.revokedAt) : null },
          new Date(ctx.now()),
        );
      }
      const tier = keyTier(mem, key.tier);
      const plan = keyPlan(key.plan);
      let rate: RateView | null = null;
      let others: readonly BucketDescriptor[] = [];
      let consumedAt = 0;
      if (m.limits) {
        const split = bucketSplit(mem, ctx.id, tier, m.limits);
        others = split.others;
        if (split.mine.length) {
          consumedAt = Date.now();
          rate = mem.table.admitTightest(split.mine);
          if (!rate) {
            // refused (nothing consumed): the full admission gives the refusal's Retry-After
            const result = mem.table.admit(split.mine);
            rate = rateView(result);
            if (!result.allowed) throw fail("rate_limit_exceeded", "Rate limit exceeded; wait until X-RateLimit-Reset.", { ...rate });
          }
        }
      }
      let denied: ErrorData | null = null;
      if (m.checkRoute) {
        try {
          checkAccess({ scopes: key.scopes, tier, plan }, { method: m.method, path: m.path });
        } catch (err) {
          if (!(err instanceof ActorError)) throw err;
          denied = err.toData();
        }
      }
      // Only what the gateway needs: this reply crosses the bus on every agent request. Built for this call from
      // fresh or frozen parts: `authorize` is an immutable message (passed by reference in-process).
      return { keyId: key.id, userId: key.userId, scopes: sharedScopes(mem, key.scopes), tier, plan, rate, otherBuckets: others, denied, consumedAt };
    },

    /**
     * Gives back units taken by `authorize` (when `buckets` is empty: the ones `authorize` admitted for `limits`)
     * or by `admit` when a later owner refused the same request.
     */
    async release(ctx, m) {
      let specs = m.buckets;
      const mem = agentMemory(ctx.memory);
      if (!specs.length && m.limits && ctx.state.key) specs = bucketSplit(mem, ctx.id, keyTier(mem, ctx.state.key.tier), m.limits).mine;
      if (specs.length) mem.table.release(specs, m.consumedAt);
      return null;
    },

    /** Admission only (buckets this key owns), for callers already authenticated. */
    admit(ctx, m) {
      const result = agentMemory(ctx.memory).table.admit(m.buckets);
      return { allowed: result.allowed, rate: rateView(result) };
    },

    /**
     * The tightest of these buckets of the key as they stand, nothing consumed (the headers of an MCP message no
     * layer counts). The gateway asks only after authenticating the key.
     */
    peek(ctx, m) {
      return agentMemory(ctx.memory).table.peekTightest(m.buckets);
    },

    get(ctx) {
      if (!ctx.state.key) throw fail("not_found", "no such key");
      return view(ctx.state.key);
    },

    async revoke(ctx, m) {
      const key = ctx.state.key;
      if (!key || key.userId !== m.userId) throw fail("not_found", "no such key");
      if (key.revokedAt) return view(key);
      const tx = await ctx.tx();
      const [row] = await tx<{ revoked_at: Date }[]>`UPDATE agent_keys SET revoked_at = now() WHERE id = ${key.id} RETURNING revoked_at`;
      key.revokedAt = row.revoked_at.toISOString();
      return view(key);
    },

    /**
     * The account's plan changed (PUT /api/v1/admin/users/plan; review R2-2): the key is capped at the new plan at
     * once, here where every gateway's `authorize` is answered, as revocation is. A plan tier above the plan comes
     * down to it (its features and REST limits with it); a SANDBOX key keeps its tier and gets the plan's features at
     * most. A raised plan raises no tier (the key was minted for what it has), only a SANDBOX key's feature cap.
     * The plan applied is the account's as committed now, not the message's: two plan changes in a row, whose
     * messages may reach a key in either order, leave it at the later plan. An operator's key is not capped.
     */
    async capPlan(ctx) {
      const key = ctx.state.key;
      if (!key) throw fail("not_found", "no such key");
      const [user] = await ctx.sql<{ role: "operator" | "merchant"; plan: string }[]>`SELECT role, plan FROM users WHERE id = ${key.userId}`;
      const before = normalizeTier(key.tier);
      if (!user || user.role === "operator") return { key: view(key), tierLowered: false };
      const plan = storedPlan(user.plan);
      const tier = capTier(before, plan);
      if (!key.revokedAt && (key.plan !== plan || tier !== before)) {
        const tx = await ctx.tx();
        await tx`UPDATE agent_keys SET plan = ${plan}, tier = ${tier} WHERE id = ${key.id}`;
        key.plan = plan;
        key.tier = tier;
      }
      return { key: view(key), tierLowered: tier !== before && !key.revokedAt };
    },
  },
  // authorize/admit only touch the in-memory buckets, synchronously: safe to run without queueing (hot path)
  reentrant: ["get", "authorize", "admit", "peek"],
  // every agent request's message: its body is built by the gateway for the call and its reply above from fresh or
  // frozen parts, so the in-process bus need not copy either (define-actor.ts `immutable`)
  immutable: ["authorize"],
});

const tableOf = (memory: ReadonlyMap<string, unknown>) => (memory.get("agent") as AgentMemory | undefined)?.table;
handOverOnStop(agentActor.kind, handOverBuckets(tableOf, ownerOf), catchUpBuckets(tableOf, ownerOf));
