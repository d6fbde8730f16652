/**
 * Review R2, G-1: which hosts a pending marker's reader may take for dead (MemberView.isGone, what
 * NatsTransport.hosts.isLive answers ActorHost with). Placement's `isLive` is relative to the newest heartbeat seen:
 * right after a JetStream stall longer than the TTL, the first beat to land makes every other host look dead until
 * its own retried beat lands. A host is gone only once others' beats kept landing for the grace period past its TTL
 * without one of its own (or it left). Pure: the view is fed entries as the bucket's watch would.
 */
import { describe, expect, test } from "bun:test";
import { goneGraceMs, MemberView, type HostBeat } from "../../actors/transport/placement.ts";

const TTL = 3000;
const beat = (hostId: string): HostBeat => ({ hostId, kinds: ["cart"], partitions: 64, ttlMs: TTL, activations: {}, owned: {}, startedAt: 0, pid: 1, hostname: "h" });
const t0 = 1_000_000;

function twoHosts(): MemberView {
  const v = new MemberView(TTL, goneGraceMs(1000));
  v.put("A", t0, beat("A"));
  v.put("B", t0, beat("B"));
  return v;
}

describe("a host whose beat lands a moment after another's once a stall is over", () => {
  test("looks dead to placement for that moment but is never gone (the reviewer's 4 s stall)", () => {
    const v = twoHosts();
    v.put("B", t0 + 4000, beat("B")); // B's retried beat lands first
    expect(v.isLive("A")).toBe(false);
    expect(v.isGone("A")).toBe(false);
    v.put("A", t0 + 4150, beat("A"));
    expect(v.isLive("A")).toBe(true);
    expect(v.isGone("A")).toBe(false);
  });

  test("is not gone after a stall far longer than the TTL and the grace either, nor while the others beat on for a second", () => {
    const v = twoHosts();
    v.put("B", t0 + 20_000, beat("B"));
    v.put("C", t0 + 20_400, beat("C"));
    v.put("B", t0 + 21_000, beat("B")); // A's beat timed out in flight; its retry is still to land
    expect(v.isGone("A")).toBe(false);
    v.put("A", t0 + 21_200, beat("A"));
    v.put("B", t0 + 25_000, beat("B"));
    expect(v.isGone("A")).toBe(false); // missing no more
  });
});

describe("a host whose beats stopped (killed, or cut off from NATS)", () => {
  test("is gone once the others' beats kept landing for the grace period after its TTL", () => {
    const v = twoHosts();
    for (let t = t0 + 1000; t <= t0 + 4000; t += 1000) v.put("B", t, beat("B"));
    expect(v.isLive("A")).toBe(false); // placement moved its partitions at t0 + 4 s
    expect(v.isGone("A")).toBe(false);
    v.put("B", t0 + 5000, beat("B"));
    expect(v.isGone("A")).toBe(false);
    v.put("B", t0 + 6000, beat("B")); // 2 s (the grace with a 1 s heartbeat) after it was first seen past its TTL
    expect(v.isGone("A")).toBe(true);
  });

  test("is aged by the bucket's beats only: a view that stands still (a broken watch) takes nobody for gone", () => {
    const v = twoHosts();
    v.put("B", t0 + 4000, beat("B"));
    // the watch broke here; however long it stays so, nothing is fed and the answer stays
    expect(v.isGone("A")).toBe(false);
  });

  test("stays as long missing when a rebuilt watch replays the bucket's entries", () => {
    const v = twoHosts();
    v.put("B", t0 + 4000, beat("B"));
    v.put("B", t0 + 5000, beat("B"));
    // the replay: each key's newest entry again, A's old one included
    v.put("A", t0, beat("A"));
    v.put("B", t0 + 5000, beat("B"));
    v.put("B", t0 + 6000, beat("B"));
    expect(v.isGone("A")).toBe(true);
  });
});

describe("a host that left or is unknown", () => {
  test("is gone at once", () => {
    const v = twoHosts();
    v.remove("A", t0 + 10);
    expect(v.isGone("A")).toBe(true);
    expect(v.isGone("never-seen")).toBe(true);
    expect(v.isGone("B")).toBe(false);
  });
});

describe("the grace period", () => {
  test("outlasts a beat's timeout and the 200 ms retry after it: 2 s with the default 1 s heartbeat", () => {
    expect(goneGraceMs(1000)).toBe(2000);
    for (const hb of [100, 200, 500, 1000, 5000]) expect(goneGraceMs(hb)).toBeGreaterThan(Math.max(500, hb) + 200);
  });
});
