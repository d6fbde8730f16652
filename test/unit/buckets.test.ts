import { describe, expect, test } from "bun:test";
import {
  admit,
  BucketTable,
  combineResults,
  rateLimitHeaders,
  release,
  tightestOf,
  type Bucket,
  type BucketSpec,
} from "../../actors/agent/buckets.ts";
import {
  bucketsFor,
  groupByOwner,
  ipBucketKey,
  mcpConfiguredLimit,
  MCP_PER_KEY_IN_FORCE,
  type BucketDescriptor,
  type LimitContext,
} from "../../actors/agent/limits.ts";
import { TIERS } from "../../actors/agent/access.ts";

const T0 = Date.UTC(2025, 2, 1, 12, 0, 0, 250); // not on a second boundary, on purpose
const MIN = 60_000;

function fakeClock(start = T0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms), set: (t: number) => (now = t) };
}

describe("a single fixed-window bucket", () => {
  test("200 concurrent requests against a fresh 100/min bucket admit exactly 100", async () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const spec: BucketSpec = { id: "key:k1:rest", limit: 100, windowMs: MIN };
    const results = await Promise.all(Array.from({ length: 200 }, async () => table.admit([spec])));
    expect(results.filter((r) => r.allowed)).toHaveLength(100);
    expect(results.slice(0, 100).every((r) => r.allowed)).toBe(true);
  });

  test("remaining counts down and reset is the window end in Unix seconds, rounded up", () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const spec: BucketSpec = { id: "b", limit: 3, windowMs: MIN };
    const first = table.admit([spec]);
    expect(first.tightest).toEqual({ id: "b", limit: 3, remaining: 2, reset: Math.ceil((T0 + MIN) / 1000) });
    clock.advance(10_000);
    const second = table.admit([spec]);
    expect(second.tightest.remaining).toBe(1);
    expect(second.tightest.reset).toBe(first.tightest.reset);
  });

  test("a refused request gets Retry-After equal to the seconds left in the window", () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const spec: BucketSpec = { id: "b", limit: 2, windowMs: MIN };
    table.admit([spec]);
    table.admit([spec]);
    clock.advance(20_000);
    const refused = table.admit([spec]);
    expect(refused.allowed).toBe(false);
    if (refused.allowed) return;
    expect(refused.retryAfter).toBe(40);
    expect(refused.tightest.remaining).toBe(0);
    expect(rateLimitHeaders(refused)).toEqual({
      "X-RateLimit-Limit": "2",
      "X-RateLimit-Remaining": "0",
      "X-RateLimit-Reset": String(Math.ceil((T0 + MIN) / 1000)),
      "Retry-After": "40",
    });
  });

  test("Retry-After is at least one second, even a millisecond before the reset", () => {
    const spec: Bucket = { id: "b", limit: 1, windowMs: MIN, state: { windowStart: T0, count: 1 } };
    const r = admit([spec], T0 + MIN - 1);
    expect(r.allowed).toBe(false);
    if (!r.allowed) expect(r.retryAfter).toBe(1);
  });

  test("at the reset time the window is fresh again", () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const spec: BucketSpec = { id: "b", limit: 1, windowMs: MIN };
    const first = table.admit([spec]);
    expect(table.admit([spec]).allowed).toBe(false);
    clock.set(first.tightest.reset * 1000);
    const again = table.admit([spec]);
    expect(again.allowed).toBe(true);
    expect(again.tightest.reset).toBe(Math.ceil((first.tightest.reset * 1000 + MIN) / 1000));
  });

  test("a refused request consumes nothing", () => {
    const b: Bucket = { id: "b", limit: 1, windowMs: MIN, state: { windowStart: T0, count: 1 } };
    const r = admit([b], T0 + 1);
    expect(r.states[0]).toEqual({ windowStart: T0, count: 1 });
  });

  test("rate-limit headers on success carry no Retry-After", () => {
    const r = admit([{ id: "b", limit: 10, windowMs: MIN }], T0);
    expect(rateLimitHeaders(r)).toEqual({
      "X-RateLimit-Limit": "10",
      "X-RateLimit-Remaining": "9",
      "X-RateLimit-Reset": String(Math.ceil((T0 + MIN) / 1000)),
    });
  });
});

describe("admission across several buckets", () => {
  test("a request is admitted only if every bucket has capacity, and then consumes from all", () => {
    const buckets: Bucket[] = [
      { id: "a", limit: 10, windowMs: MIN, state: { windowStart: T0, count: 3 } },
      { id: "b", limit: 5, windowMs: MIN, state: { windowStart: T0, count: 1 } },
    ];
    const r = admit(buckets, T0 + 1000);
    expect(r.allowed).toBe(true);
    expect(r.states).toEqual([
      { windowStart: T0, count: 4 },
      { windowStart: T0, count: 2 },
    ]);
  });

  test("when one bucket refuses, no bucket is consumed", () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const wide: BucketSpec = { id: "wide", limit: 100, windowMs: MIN };
    const narrow: BucketSpec = { id: "narrow", limit: 2, windowMs: MIN };
    table.admit([wide, narrow]);
    table.admit([wide, narrow]);
    const refused = table.admit([wide, narrow]);
    expect(refused.allowed).toBe(false);
    if (!refused.allowed) expect(refused.refusedBy).toEqual(["narrow"]);
    expect(table.peek(wide).remaining).toBe(98);
    expect(table.peek(narrow).remaining).toBe(0);
  });

  test("headers come from the tightest bucket", () => {
    const r = admit(
      [
        { id: "per-key", limit: 30, windowMs: MIN, state: { windowStart: T0, count: 5 } },
        { id: "per-tool", limit: 20, windowMs: MIN, state: { windowStart: T0, count: 17 } },
        { id: "global", limit: 500, windowMs: 15 * MIN, state: { windowStart: T0, count: 100 } },
      ],
      T0 + 1000,
    );
    expect(r.tightest.id).toBe("per-tool");
    expect(r.tightest.remaining).toBe(2);
    expect(rateLimitHeaders(r)["X-RateLimit-Limit"]).toBe("20");
  });

  test("of two refusing buckets, Retry-After waits for the one that frees up last", () => {
    const r = admit(
      [
        { id: "minute", limit: 1, windowMs: MIN, state: { windowStart: T0, count: 1 } },
        { id: "quarter", limit: 1, windowMs: 15 * MIN, state: { windowStart: T0, count: 1 } },
      ],
      T0,
    );
    expect(r.allowed).toBe(false);
    if (r.allowed) return;
    expect(r.retryAfter).toBe(900);
    expect(r.tightest.id).toBe("quarter");
    expect(r.refusedBy.sort()).toEqual(["minute", "quarter"]);
  });

  test("on equal remaining, the bucket that resets later is the tightest", () => {
    expect(
      tightestOf([
        { id: "a", limit: 10, remaining: 0, reset: 100 },
        { id: "b", limit: 10, remaining: 0, reset: 200 },
      ]).id,
    ).toBe("b");
  });

  test("released units are credited back only within the same window", () => {
    const b: Bucket = { id: "b", limit: 5, windowMs: MIN, state: { windowStart: T0, count: 3 } };
    expect(release(b, T0, T0 + 1000)).toEqual({ windowStart: T0, count: 2 });
    expect(release(b, T0, T0 + MIN)).toEqual({ windowStart: T0 + MIN, count: 0 });
  });

  test("a table releases what a later owner refused", () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const spec: BucketSpec = { id: "b", limit: 5, windowMs: MIN };
    table.admit([spec]);
    table.release([spec], clock.now());
    expect(table.peek(spec).remaining).toBe(5);
  });

  test("results from two owners combine: refused if either refused, headers from the longest wait", () => {
    const ok = admit([{ id: "agent", limit: 30, windowMs: MIN }], T0);
    const no = admit([{ id: "ip", limit: 1, windowMs: 15 * MIN, state: { windowStart: T0, count: 1 } }], T0);
    const combined = combineResults([ok, no]);
    expect(combined.allowed).toBe(false);
    expect(combined.tightest.id).toBe("ip");
    expect(combineResults([ok]).tightest.id).toBe("agent");
  });

  test("sweeping drops only buckets whose window is over", () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    table.admit([{ id: "minute", limit: 5, windowMs: MIN }]);
    table.admit([{ id: "quarter", limit: 5, windowMs: 15 * MIN }]);
    clock.advance(MIN);
    expect(table.sweep()).toBe(1);
    expect(table.size).toBe(1);
  });
});

describe("the spec's rate-limit layers", () => {
  const ip = "203.0.113.7";
  const find = (bs: BucketDescriptor[], layer: string) => bs.filter((b) => b.layer === layer);
  const one = (bs: BucketDescriptor[], layer: string) => {
    const found = find(bs, layer);
    expect(found).toHaveLength(1);
    return found[0]!;
  };

  test.each(TIERS.map((t) => [t]))("MCP per key is 30/min in force for a %s key", (tier) => {
    const b = one(bucketsFor({ surface: "mcp", keyId: "k1", tier, ip }), "mcp-key");
    expect(b).toEqual({ id: "key:k1:mcp", limit: 30, windowMs: MIN, owner: "agent/k1", layer: "mcp-key" });
  });

  test("the configured MCP plan values are 30, 200, 1000 and 5000 and a tierless key is STARTER", () => {
    expect([mcpConfiguredLimit("STARTER"), mcpConfiguredLimit("GROWTH"), mcpConfiguredLimit("PRO"), mcpConfiguredLimit("ENTERPRISE")]).toEqual([
      30, 200, 1000, 5000,
    ]);
    expect(mcpConfiguredLimit(null)).toBe(30);
    expect(MCP_PER_KEY_IN_FORCE).toBe(30);
  });

  test.each([
    ["search_products", 20],
    ["search_products_enriched", 15],
    ["complete_checkout", 10],
    ["create_cart", 20],
    ["ucp_create_checkout", 20],
  ])("the MCP tool %s is limited to %d per minute per key", (tool, limit) => {
    const bs = bucketsFor({ surface: "mcp", keyId: "k1", tier: "PRO", ip, toolName: tool });
    expect(one(bs, "mcp-tool")).toEqual({ id: `key:k1:tool:${tool}`, limit, windowMs: MIN, owner: "agent/k1", layer: "mcp-tool" });
    expect(one(bs, "mcp-key").limit).toBe(30);
  });

  test("a tool without its own limit adds no tool bucket", () => {
    expect(find(bucketsFor({ surface: "mcp", keyId: "k1", ip, toolName: "get_product_details" }), "mcp-tool")).toHaveLength(0);
  });

  test("an anonymous MCP caller is limited per IP at the per-key value and per tool", () => {
    const bs = bucketsFor({ surface: "mcp", ip, toolName: "search_products" });
    expect(one(bs, "mcp-key")).toMatchObject({ id: `ip:${ip}:mcp`, limit: 30, owner: `ip/${ip}` });
    expect(one(bs, "mcp-tool")).toMatchObject({ id: `ip:${ip}:tool:search_products`, limit: 20 });
  });

  test("the global layer is 500 per 15 minutes per IP for anonymous traffic", () => {
    const b = one(bucketsFor({ surface: "other", ip }), "global");
    expect(b).toEqual({ id: `ip:${ip}:global`, limit: 500, windowMs: 15 * MIN, owner: `ip/${ip}`, layer: "global" });
  });

  test("the global layer is per user for an authenticated user", () => {
    const b = one(bucketsFor({ surface: "other", ip, userId: "u1" }), "global");
    expect(b).toMatchObject({ id: "user:u1:global", limit: 500, windowMs: 15 * MIN, owner: "user/u1" });
  });

  test("the global layer is per key on the MCP endpoint", () => {
    expect(one(bucketsFor({ surface: "mcp", keyId: "k1", ip }), "global")).toMatchObject({ id: "key:k1:global", owner: "agent/k1" });
  });

  test("the dedicated MCP discovery bucket is 1000/min per IP and not subject to the per-key or global buckets", () => {
    const bs = bucketsFor({ surface: "mcp-discovery", ip });
    expect(bs).toEqual([{ id: `ip:${ip}:mcp-discovery`, limit: 1000, windowMs: MIN, owner: `ip/${ip}`, layer: "mcp-discovery" }]);
  });

  test("the dedicated MCP customer bucket is 200/min per customer", () => {
    const bs = bucketsFor({ surface: "mcp-customer", ip, customerId: "c9", keyId: "k1" });
    expect(one(bs, "mcp-customer")).toEqual({
      id: "customer:c9:mcp-customer",
      limit: 200,
      windowMs: MIN,
      owner: "customer/c9",
      layer: "mcp-customer",
    });
    expect(find(bs, "mcp-key")).toHaveLength(0);
  });

  test("the dedicated MCP checkout bucket is 60/min per agent, plus 1500/min per agent across the three", () => {
    const bs = bucketsFor({ surface: "mcp-checkout", ip, keyId: "k1", tier: "ENTERPRISE" });
    expect(one(bs, "mcp-checkout")).toMatchObject({ id: "key:k1:mcp-checkout", limit: 60, owner: "agent/k1" });
    expect(one(bs, "mcp-dedicated-agent")).toMatchObject({ id: "key:k1:mcp-dedicated", limit: 1500, windowMs: MIN });
    expect(find(bs, "mcp-key")).toHaveLength(0);
    expect(find(bs, "global")).toHaveLength(0);
  });

  test("all three dedicated endpoints share the agent's 1500/min bucket", () => {
    const ids = (["mcp-discovery", "mcp-customer", "mcp-checkout"] as const).map(
      (surface) => one(bucketsFor({ surface, ip, keyId: "k1", customerId: "c1" }), "mcp-dedicated-agent").id,
    );
    expect(new Set(ids)).toEqual(new Set(["key:k1:mcp-dedicated"]));
  });

  test("the demo store is 20/min per IP", () => {
    const bs = bucketsFor({ surface: "demo-mcp", ip });
    expect(one(bs, "demo")).toEqual({ id: `ip:${ip}:demo`, limit: 20, windowMs: MIN, owner: `ip/${ip}`, layer: "demo" });
    expect(one(bs, "global").owner).toBe(`ip/${ip}`);
  });

  test.each([
    ["STARTER", 100],
    ["GROWTH", 500],
    ["PRO", 2000],
    ["ENTERPRISE", 10000],
    ["SANDBOX", 60],
  ] as const)("agentic REST allows a %s key %d requests per minute", (tier, limit) => {
    const bs = bucketsFor({ surface: "rest-agent", keyId: "k1", tier, ip });
    expect(bs).toEqual([{ id: "key:k1:rest", limit, windowMs: MIN, owner: "agent/k1", layer: "rest-tier" }]);
  });

  test("agentic REST without a key is bounded by the global per-IP layer", () => {
    expect(bucketsFor({ surface: "rest-agent", ip })).toEqual([
      { id: `ip:${ip}:global`, limit: 500, windowMs: 15 * MIN, owner: `ip/${ip}`, layer: "global" },
    ]);
  });

  test("public REST is 30/min per IP", () => {
    expect(one(bucketsFor({ surface: "public-rest", ip }), "public")).toEqual({
      id: `ip:${ip}:public`,
      limit: 30,
      windowMs: MIN,
      owner: `ip/${ip}`,
      layer: "public",
    });
  });

  test("a keyed MCP request's buckets all live in the agent actor", () => {
    const ctx: LimitContext = { surface: "mcp", keyId: "k1", ip, toolName: "create_cart" };
    expect([...groupByOwner(bucketsFor(ctx)).keys()]).toEqual(["agent/k1"]);
  });

  test("an IPv6 client is limited per /64 and an IPv4-mapped address as IPv4", () => {
    expect(ipBucketKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(ipBucketKey("2001:db8:1:2::1")).toBe(ipBucketKey("2001:db8:1:2:ffff::9"));
    expect(ipBucketKey("::ffff:198.51.100.4")).toBe("198.51.100.4");
  });

  test("a keyed agentic REST request's buckets do not depend on the client address (the gateway does not look it up)", () => {
    for (const tier of TIERS) {
      const at = (addr: string) => bucketsFor({ surface: "rest-agent", keyId: "k1", tier, ip: addr });
      expect(at("")).toEqual(at("203.0.113.9"));
      expect(at("")).toEqual(at("2001:db8::1"));
      expect(at("").every((b) => b.owner === "agent/k1")).toBe(true);
    }
  });

  test("thirty MCP calls in a minute pass and the thirty-first is refused", () => {
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const specs = bucketsFor({ surface: "mcp", keyId: "k1", tier: "ENTERPRISE", ip });
    const outcomes = Array.from({ length: 31 }, () => table.admit(specs).allowed);
    expect(outcomes.filter(Boolean)).toHaveLength(30);
    expect(outcomes[30]).toBe(false);
  });
});

describe("the bucket table against the pure admission function", () => {
  test("a random mix of admissions, releases and clock steps gives exactly what `admit`/`release` give", () => {
    // A reference model: plain Bucket values driven through the pure functions, as the table once did.
    let seed = 42;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    const specs: BucketSpec[] = [
      { id: "a", limit: 3, windowMs: MIN },
      { id: "b", limit: 5, windowMs: 2 * MIN },
      { id: "c", limit: 1, windowMs: 10_000 },
      { id: "d", limit: 4, windowMs: MIN },
    ];
    const clock = fakeClock();
    const table = new BucketTable(clock.now);
    const model = new Map<string, Bucket>(specs.map((s) => [s.id, { ...s }]));
    for (let step = 0; step < 3000; step++) {
      const op = rand(10);
      if (op < 2) {
        // whole seconds, so steps often land exactly on a window's end, where "ended" is decided
        clock.advance(rand(31) * 1_000);
        continue;
      }
      const chosen = specs.filter(() => rand(2) === 0);
      if (chosen.length === 0) continue;
      if (op < 3) {
        const consumedAt = clock.now() - rand(21) * 1_000;
        table.release(chosen, consumedAt);
        for (const s of chosen) {
          const b = model.get(s.id)!;
          if (!b.state || consumedAt < b.state.windowStart) continue;
          b.state = release(b, b.state.windowStart, clock.now());
        }
        continue;
      }
      const expected = admit(chosen.map((s) => ({ ...model.get(s.id)! })), clock.now());
      if (expected.allowed) chosen.forEach((s, i) => (model.get(s.id)!.state = expected.states[i]));
      if (op < 6) {
        // the headers-only path: the tightest bucket when admitted, null (and nothing consumed) when refused
        const { limit, remaining, reset } = expected.tightest;
        expect(table.admitTightest(chosen)).toEqual(expected.allowed ? { limit, remaining, reset } : null);
      } else expect(table.admit(chosen)).toEqual(expected);
    }
  });
});
