/** Pure placement logic: partition hash, rendezvous ownership, relative liveness. No I/O. */
import { describe, expect, test } from "bun:test";
import {
  MemberView,
  computeOwnership,
  fnv1a32,
  ownedPartitions,
  partitionOf,
  partitionSubject,
  rendezvousOwner,
  type HostBeat,
} from "../../actors/transport/placement.ts";

function beat(hostId: string, kinds = ["cart"]): HostBeat {
  return { hostId, kinds, partitions: 64, ttlMs: 3000, activations: {}, owned: {}, startedAt: 0, pid: 1, hostname: "h" };
}

describe("partition hash", () => {
  test("FNV-1a matches the published test vectors", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });

  test("an id always maps to the same partition, inside the range", () => {
    for (let i = 0; i < 1000; i++) {
      const p = partitionOf(`cart-${i}`, 64);
      expect(p).toBe(partitionOf(`cart-${i}`, 64));
      expect(p).toBeGreaterThanOrEqual(0);
      expect(p).toBeLessThan(64);
    }
    expect(partitionSubject("cart", 7)).toBe("actor.cart.7");
  });

  test("ids spread over partitions roughly evenly", () => {
    const counts = new Array(64).fill(0);
    for (let i = 0; i < 64_000; i++) counts[partitionOf(crypto.randomUUID(), 64)]++;
    expect(Math.min(...counts)).toBeGreaterThan(800);
    expect(Math.max(...counts)).toBeLessThan(1200);
  });
});

describe("rendezvous ownership", () => {
  const hosts = ["h1", "h2", "h3"];

  test("every partition has exactly one owner, whatever order the hosts are listed in", () => {
    for (let p = 0; p < 64; p++) {
      const o = rendezvousOwner("cart", p, hosts);
      expect(hosts).toContain(o!);
      expect(rendezvousOwner("cart", p, [...hosts].reverse())).toBe(o);
    }
    const owned = hosts.map((h) => ownedPartitions(h, "cart", 64, hosts));
    expect(owned.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 64 }, (_, i) => i));
  });

  test("partitions are shared roughly evenly between hosts", () => {
    const ids = Array.from({ length: 10 }, (_, i) => `host-${i}`);
    const per = ids.map((h) => ownedPartitions(h, "cart", 4096, ids).length);
    expect(Math.min(...per)).toBeGreaterThan(300);
    expect(Math.max(...per)).toBeLessThan(520);
  });

  test("when a host dies only its partitions move, and when one joins it only takes partitions", () => {
    const before = new Map<number, string>();
    for (let p = 0; p < 256; p++) before.set(p, rendezvousOwner("cart", p, hosts)!);
    for (let p = 0; p < 256; p++) {
      const after = rendezvousOwner("cart", p, ["h1", "h3"])!;
      if (before.get(p) !== "h2") expect(after).toBe(before.get(p)!);
      const joined = rendezvousOwner("cart", p, [...hosts, "h4"])!;
      if (joined !== "h4") expect(joined).toBe(before.get(p)!);
    }
  });

  test("no live host means no owner", () => {
    expect(rendezvousOwner("cart", 0, [])).toBeUndefined();
  });
});

describe("liveness relative to the newest heartbeat", () => {
  test("a host is dead once the newest heartbeat is more than the TTL newer than its own", () => {
    const v = new MemberView(3000);
    v.put("a", 10_000, beat("a"));
    v.put("b", 10_500, beat("b"));
    expect(v.live()).toEqual(["a", "b"]);
    v.put("b", 13_000, beat("b"));
    expect(v.live()).toEqual(["a", "b"]); // exactly the TTL: still live
    v.put("b", 13_001, beat("b"));
    expect(v.live()).toEqual(["b"]);
    expect(v.isLive("a")).toBe(false);
    v.put("a", 13_500, beat("a")); // a comes back
    expect(v.live()).toEqual(["a", "b"]);
  });

  test("a stalled bucket declares nobody dead (time alone never kills)", () => {
    const v = new MemberView(3000);
    v.put("a", 10_000, beat("a"));
    v.put("b", 10_100, beat("b"));
    // no entries for a long while: the view does not change
    expect(v.live()).toEqual(["a", "b"]);
  });

  test("a clean leave removes the host at once", () => {
    const v = new MemberView(3000);
    v.put("a", 10_000, beat("a"));
    v.put("b", 10_000, beat("b"));
    v.remove("b", 10_100);
    expect(v.live()).toEqual(["a"]);
  });

  test("an out-of-order older entry does not roll a host back", () => {
    const v = new MemberView(3000);
    v.put("a", 20_000, beat("a"));
    v.put("a", 10_000, beat("a"));
    v.put("b", 22_000, beat("b"));
    expect(v.live()).toEqual(["a", "b"]);
  });

  test("ownership of a kind only considers live hosts that serve that kind", () => {
    const v = new MemberView(3000);
    v.put("a", 10_000, beat("a", ["cart", "store"]));
    v.put("b", 10_000, beat("b", ["cart"]));
    v.put("c", 1_000, beat("c", ["cart", "store"])); // long dead
    const own = computeOwnership(v, ["cart", "store"], 32);
    expect(new Set(own.get("cart")!.values())).toEqual(new Set(["a", "b"]));
    expect(new Set(own.get("store")!.values())).toEqual(new Set(["a"]));
    expect(own.get("cart")!.size).toBe(32);
  });
});
