/**
 * The MCP session directory's contract (gateway/mcp/session-directory.ts), run against both implementations: the
 * in-memory one of the embedded default and the JetStream KV bucket of distributed mode (real NATS, 127.0.0.1:4222,
 * a bucket of its own per test).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { MemorySessionDirectory, NatsSessionDirectory, TOUCH_EVERY_MS, type SessionDirectory, type SessionRecord } from "../../gateway/mcp/session-directory.ts";

let nc: NatsConnection;
const buckets: string[] = [];

beforeAll(async () => {
  nc = await connect({ servers: "nats://127.0.0.1:4222" });
});

afterAll(async () => {
  const kvm = new Kvm(nc);
  for (const b of buckets) await (await kvm.open(b)).destroy().catch(() => undefined);
  await nc.close();
});

interface Subject {
  dir: SessionDirectory;
  /** Lets `ms` pass for the directory's TTL. */
  pass(ms: number): Promise<void>;
}

const implementations: [string, (ttlMs: number) => Promise<Subject>][] = [
  [
    "memory",
    async (ttlMs) => {
      let now = Date.now();
      const dir = new MemorySessionDirectory(ttlMs, () => now);
      return { dir, pass: async (ms) => void (now += ms) };
    },
  ],
  [
    "NATS KV",
    async (ttlMs) => {
      const bucket = `mcp_sessions_test_${crypto.randomUUID().slice(0, 8)}`;
      buckets.push(bucket);
      const dir = await NatsSessionDirectory.open(nc, ttlMs, bucket, 1);
      return { dir, pass: (ms) => Bun.sleep(ms) };
    },
  ],
];

function record(over: Partial<SessionRecord> = {}): SessionRecord {
  const now = Date.now();
  return {
    id: crypto.randomUUID(),
    slug: "demo-store",
    endpoint: "main",
    enabled: null,
    owner: "127.0.0.1",
    principal: null,
    protocolVersion: "2025-06-18",
    client: { protocolVersion: "2025-06-18", capabilities: { elicitation: { form: {} } }, clientInfo: { name: "t", version: "1" } },
    createdAt: now,
    lastUsedAt: now,
    ...over,
  };
}

for (const [name, make] of implementations) {
  describe(`the ${name} session directory`, () => {
    test("returns what was put, and nothing for an id never put", async () => {
      const { dir } = await make(60_000);
      const r = record({ enabled: ["search_products"], principal: "key-1" });
      await dir.put(r);
      const got = await dir.get(r.id);
      expect(got?.record).toEqual(r);
      expect(got?.revision).toBeGreaterThan(0);
      expect(await dir.get(crypto.randomUUID())).toBeUndefined();
    });

    test("binds an unbound session once: a second principal finds it bound to the first", async () => {
      const { dir } = await make(60_000);
      const r = record();
      await dir.put(r);
      const held = (await dir.get(r.id))!;
      expect((await dir.bind(held, "key-a"))?.record.principal).toBe("key-a");
      // the stale read (principal null) loses to the write it raced
      expect((await dir.bind(held, "key-b"))?.record.principal).toBe("key-a");
      expect((await dir.get(r.id))?.record.principal).toBe("key-a");
    });

    test("touch writes only once lastUsedAt is TOUCH_EVERY_MS old", async () => {
      const { dir } = await make(60 * 60_000);
      const r = record();
      await dir.put(r);
      const held = (await dir.get(r.id))!;
      await dir.touch(held, r.lastUsedAt + TOUCH_EVERY_MS - 1);
      expect(await dir.get(r.id)).toEqual(held);
      await dir.touch(held, r.lastUsedAt + TOUCH_EVERY_MS);
      const after = (await dir.get(r.id))!;
      expect(after.record.lastUsedAt).toBe(r.lastUsedAt + TOUCH_EVERY_MS);
      expect(after.revision).not.toBe(held.revision);
    });

    test("a deleted session stays deleted: a late touch or bind does not bring it back", async () => {
      const { dir } = await make(60_000);
      const r = record({ lastUsedAt: Date.now() - 2 * TOUCH_EVERY_MS });
      await dir.put(r);
      const held = (await dir.get(r.id))!;
      await dir.delete(r.id);
      expect(await dir.get(r.id)).toBeUndefined();
      await dir.touch(held, Date.now());
      expect(await dir.bind(held, "key-a")).toBeUndefined();
      expect(await dir.get(r.id)).toBeUndefined();
    });

    test("a touch restarts the TTL: a used session outlives its first TTL", async () => {
      const { dir, pass } = await make(1_500);
      const r = record({ lastUsedAt: Date.now() - 2 * TOUCH_EVERY_MS });
      await dir.put(r);
      await pass(1_000);
      await dir.touch((await dir.get(r.id))!, Date.now());
      await pass(1_000);
      expect((await dir.get(r.id))?.record.id).toBe(r.id);
    }, 10_000);

    test("an entry not written again within the TTL expires", async () => {
      const { dir, pass } = await make(1_000);
      const r = record();
      await dir.put(r);
      expect(await dir.get(r.id)).toBeDefined();
      await pass(2_500);
      expect(await dir.get(r.id)).toBeUndefined();
    }, 10_000);
  });
}
