/**
 * The MCP session directory's contract (gateway/mcp/session-directory.ts), run against both implementations: the
 * in-memory one of the embedded default and the JetStream KV bucket of distributed mode (real NATS, 127.0.0.1:4222,
 * a bucket of its own per test); then the bucket's leader reads and the directory's lifecycle in boot.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { MemorySessionDirectory, NatsSessionDirectory, SESSION_DIRECTORY, TOUCH_EVERY_MS, type SessionDirectory, type SessionRecord } from "../../gateway/mcp/session-directory.ts";
import { startServer } from "../helpers/server.ts";

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

describe("the NATS KV session bucket", () => {
  const directGets = async (bucket: string) => (await (await jetstreamManager(nc)).streams.info(`KV_${bucket}`)).config.allow_direct ?? false;
  const newBucket = () => {
    const bucket = `mcp_sessions_test_${crypto.randomUUID().slice(0, 8)}`;
    buckets.push(bucket);
    return bucket;
  };

  test("is created without direct gets, so every read is the stream leader's and no lagging replica answers it", async () => {
    const bucket = newBucket();
    const dir = await NatsSessionDirectory.open(nc, 60_000, bucket, 1);
    expect(await directGets(bucket)).toBe(false);
    const r = record();
    await dir.put(r);
    expect((await dir.get(r.id))?.record).toEqual(r);
  });

  test("created earlier with direct gets, it is switched to leader reads when a gateway opens it, its entries kept", async () => {
    const bucket = newBucket();
    const old = await new Kvm(nc).create(bucket, { history: 1, ttl: 60_000, replicas: 1, allow_direct: true });
    expect(await directGets(bucket)).toBe(true);
    const r = record();
    await old.put(r.id, JSON.stringify(r));
    const dir = await NatsSessionDirectory.open(nc, 60_000, bucket, 1);
    expect(await directGets(bucket)).toBe(false);
    expect((await dir.get(r.id))?.record).toEqual(r);
  });
});

describe("the NATS session directory's messages between gateways", () => {
  /** Two gateways' directories on one bucket, each recording what it receives. */
  async function pair() {
    const bucket = `mcp_sessions_test_${crypto.randomUUID().slice(0, 8)}`;
    buckets.push(bucket);
    const dirs = [await NatsSessionDirectory.open(nc, 60_000, bucket, 1), await NatsSessionDirectory.open(nc, 60_000, bucket, 1)] as const;
    const got = dirs.map(() => [] as [string, Record<string, unknown>][]);
    // the subjects are the deployment's: other gateways on this NATS server may use them meanwhile, so only this
    // test's sessions are recorded
    const ours: [string, string] = [crypto.randomUUID(), crypto.randomUUID()];
    const stops = dirs.map((d, i) => d.onForwarded((sessionId, message) => void (ours.includes(sessionId) && got[i]!.push([sessionId, message]))));
    return { dirs, got, ours, stop: () => stops.forEach((s) => s()) };
  }

  test("a broadcast cancel reaches every other gateway, not its sender; a forwarded answer only the gateway named", async () => {
    const { dirs, got, ours, stop } = await pair();
    try {
      const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } };
      await dirs[0].broadcast(ours[0], cancel);
      const answer = { jsonrpc: "2.0", id: `${dirs[0].gatewayId}.1.0`, result: { action: "accept" } };
      await dirs[1].forward(dirs[0].gatewayId, ours[1], answer);
      await nc.flush();
      for (let i = 0; i < 50 && got[0]!.length + got[1]!.length < 2; i++) await Bun.sleep(10);
      await Bun.sleep(50); // and nothing more arrives
      expect(got[0]).toEqual([[ours[1], answer]]);
      expect(got[1]).toEqual([[ours[0], cancel]]);
    } finally {
      stop();
    }
  });
});

describe("the embedded gateway's session directory", () => {
  test("is opened by boot and closed when the server stops, after the MCP gateway", async () => {
    const srv = await startServer({ seed: false, config: { LOG_LEVEL: "error" } });
    let dir: SessionDirectory | undefined;
    try {
      dir = srv.running.services.extras.get(SESSION_DIRECTORY) as SessionDirectory | undefined;
      expect(dir?.kind).toBe("memory");
      await dir!.put(record());
    } finally {
      await srv.stop();
    }
    // closed: its entries (and the sweep timer holding them) are gone
    expect((dir as unknown as { entries: Map<string, unknown> }).entries.size).toBe(0);
  }, 60_000);
});
