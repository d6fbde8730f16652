/**
 * The membership watch (placement.ts) after it breaks: a NATS node that dies takes the watch's consumer with it, and
 * while JetStream elects a new leader a new watch is refused for seconds. Until the watch is back the host's view
 * stands still; it must come back soon after the bucket does. A stand-in bucket (no NATS) makes the failures exact.
 */
import { afterEach, expect, test } from "bun:test";
import type { KV, KvEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { Membership, type HostBeat } from "../../actors/transport/placement.ts";

/** A watch's entries as an async iterator that ends when the watch is stopped or broken. */
class Feed implements AsyncIterable<KvEntry> {
  private queue: KvEntry[] = [];
  private wake?: () => void;
  private ended = false;

  push(e: KvEntry): void {
    this.queue.push(e);
    this.wake?.();
  }

  stop(): void {
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<KvEntry> {
    for (;;) {
      while (this.queue.length) yield this.queue.shift()!;
      if (this.ended) return;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }
}

/** Just what Membership uses of a KV bucket: put, delete and watch (last value per key, then every change). */
class StandInBucket {
  private revision = 0;
  private readonly last = new Map<string, KvEntry>();
  private readonly feeds = new Set<Feed>();
  /** How many of the next watch() calls are refused (a leader election). */
  refuseWatches = 0;
  watchCalls = 0;

  async put(key: string, data: string): Promise<number> {
    const revision = ++this.revision;
    const entry = { key, revision, created: new Date(), operation: "PUT", json: () => JSON.parse(data) } as unknown as KvEntry;
    this.last.set(key, entry);
    for (const f of this.feeds) f.push(entry);
    return revision;
  }

  async delete(key: string): Promise<void> {
    this.last.delete(key);
  }

  async watch(): Promise<Feed> {
    this.watchCalls++;
    if (this.refuseWatches > 0) {
      this.refuseWatches--;
      throw new Error("timeout");
    }
    const feed = new Feed();
    this.feeds.add(feed);
    for (const e of this.last.values()) feed.push(e);
    const stop = feed.stop.bind(feed);
    feed.stop = () => {
      this.feeds.delete(feed);
      stop();
    };
    return feed;
  }

  /** The consumers went with a NATS node: every open watch ends. */
  breakWatches(): void {
    for (const f of [...this.feeds]) f.stop();
  }
}

const beat = (): Omit<HostBeat, "hostId" | "ttlMs"> => ({ kinds: ["k"], partitions: 4, activations: {}, owned: {}, startedAt: 0, pid: 1, hostname: "h" });
let membership: Membership | undefined;
afterEach(async () => {
  await membership?.stop(false);
});

test("a broken membership watch that is refused while the bucket elects a leader is back within a second of the bucket", async () => {
  const bucket = new StandInBucket();
  membership = new Membership({
    nc: {} as NatsConnection,
    kv: bucket as unknown as KV,
    hostId: "host-a",
    heartbeatMs: 1000,
    ttlMs: 3000,
    onChange: () => {},
    beat,
  });
  await membership.start();
  expect(membership.view.live()).toEqual(["host-a"]);
  // the watch breaks, and the next three tries to rebuild it are refused
  bucket.refuseWatches = 3;
  const calls = bucket.watchCalls;
  bucket.breakWatches();
  const t0 = performance.now();
  // another host's heartbeat lands once the bucket answers again: the view shows it as soon as the watch is back
  await bucket.put("host-b", JSON.stringify({ ...beat(), hostId: "host-b", ttlMs: 3000 }));
  while (!membership.view.live().includes("host-b") && performance.now() - t0 < 3000) await Bun.sleep(20);
  expect(membership.view.live()).toEqual(["host-a", "host-b"]);
  expect(bucket.watchCalls - calls).toBe(4);
  // 200 ms before the first try, then a try every 250 ms: not the watchdog's four heartbeats (4 s) between tries
  expect(performance.now() - t0).toBeLessThan(1500);
});

test("a host joining while the bucket still refuses watches (just created by another host) joins once it answers", async () => {
  const bucket = new StandInBucket();
  bucket.refuseWatches = 2;
  membership = new Membership({ nc: {} as NatsConnection, kv: bucket as unknown as KV, hostId: "host-a", heartbeatMs: 1000, ttlMs: 3000, onChange: () => {}, beat });
  await membership.start();
  expect(membership.view.live()).toEqual(["host-a"]);
  expect(bucket.watchCalls).toBe(3);
});
