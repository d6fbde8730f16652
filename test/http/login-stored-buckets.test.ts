/**
 * The failed-log-in buckets are stored (audit Z-1; actors/ip/stored-buckets.ts, migration 0075): each attempt's unit
 * is in `rate_limit_buckets` before its answer, a successful log-in's unit goes back there too, concurrent attempts
 * are counted exactly, and so are two activations of one owner that overlap (a moving partition). The other buckets
 * are handed over on a clean stop: only used ones still in their window, never over a stored log-in count. Ended rows
 * are pruned. (Restarts of real actor hosts: test/distributed/rate-limit-restart.test.ts.)
 *
 * One server, small log-in limits (5 per address, 6 per e-mail); attempts come from 127.0.3x.y source addresses
 * (node:http `localAddress`), so each test has buckets of its own.
 */
import { describe, expect, test } from "bun:test";
import http from "node:http";
import { BucketTable } from "../../actors/agent/buckets.ts";
import { admitStored, handOverBuckets, pruneEnded } from "../../actors/ip/stored-buckets.ts";
import { ADMIN } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const PER_IP = 5;
const WINDOW_MS = 15 * 60_000;

const srv = useServer({ config: { LOGIN_LIMIT_PER_IP: PER_IP, LOGIN_LIMIT_PER_EMAIL: PER_IP + 1 } });

/** A REST log-in from the given loopback source address: status, the limit headers and the error code. */
function loginFrom(from: string, email: string, password: string): Promise<{ status: number; code?: string; remaining?: string; limit?: string }> {
  const url = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: Number(url.port), path: "/api/v1/auth/login", method: "POST", headers: { "content-type": "application/json" }, localAddress: from },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            code: text ? JSON.parse(text).code : undefined,
            remaining: res.headers["x-ratelimit-remaining"] as string | undefined,
            limit: res.headers["x-ratelimit-limit"] as string | undefined,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ email, password }));
  });
}

/** The stored count of an address's log-in bucket (null: no row). */
async function storedCount(address: string): Promise<number | null> {
  const rows = await srv.db.sql<{ used: number; durable: boolean }[]>`
    SELECT used, durable FROM rate_limit_buckets WHERE owner = ${`ip/${address}`} AND bucket_id = ${`ip:${address}:login`}`;
  if (rows[0]) expect(rows[0].durable).toBe(true);
  return rows[0]?.used ?? null;
}

describe("the failed-log-in buckets are stored", () => {
  test("each failed attempt is counted in the database by the time it is answered, and a successful log-in's unit is given back there", async () => {
    const from = "127.0.31.1";
    expect(await storedCount(from)).toBeNull();
    for (let i = 1; i <= 3; i++) {
      expect(await loginFrom(from, `nobody${i}@example.com`, "wrong-password")).toEqual({ status: 401, code: "unauthorized", remaining: String(PER_IP - i), limit: String(PER_IP) });
      expect(await storedCount(from)).toBe(i);
    }
    expect((await loginFrom(from, ADMIN.email, ADMIN.password)).status).toBe(200);
    expect(await storedCount(from)).toBe(3);
  });

  test("concurrent failed attempts on a fresh address are counted exactly: the limit's worth answered 401, the rest 429, the row at the limit", async () => {
    const from = "127.0.31.2";
    const answers = await Promise.all(Array.from({ length: 3 * PER_IP }, (_, i) => loginFrom(from, `racer${i}@example.com`, "wrong-password")));
    expect(answers.filter((a) => a.status === 401).length).toBe(PER_IP);
    expect(answers.filter((a) => a.status !== 401)).toEqual(Array.from({ length: 2 * PER_IP }, () => ({ status: 429, code: "rate_limit_exceeded", remaining: "0", limit: String(PER_IP) })));
    expect(await storedCount(from)).toBe(PER_IP);
  }, 30_000);

  test("two activations of one owner that overlap (a moving partition) admit exactly the limit between them", async () => {
    const owner = "ip/127.0.31.3";
    const spec = { id: "ip:127.0.31.3:login", limit: 4, windowMs: WINDOW_MS };
    const [a, b] = [new BucketTable(), new BucketTable()];
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => admitStored(srv.db.sql, owner, i % 2 ? a : b, [spec])));
    expect(results.filter((r) => r.allowed).length).toBe(4);
    const [row] = await srv.db.sql<{ used: number }[]>`SELECT used FROM rate_limit_buckets WHERE owner = ${owner}`;
    expect(row!.used).toBe(4);
  });
});

describe("the hand-over of the other buckets and the retention", () => {
  test("hands over only the used buckets still in their window and never writes over a stored log-in count", async () => {
    const now = Date.now();
    const owner = "ip/127.0.32.1";
    await srv.db.sql`
      INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
      VALUES (${owner}, 'ip:127.0.32.1:login', ${now}, ${now + WINDOW_MS}, 5, true)`;
    const table = new BucketTable();
    table.put("ip:127.0.32.1:global", WINDOW_MS, { windowStart: now - 1000, count: 7 });
    table.put("ip:127.0.32.1:public", 60_000, { windowStart: now - 61_000, count: 30 }); // window over
    table.put("ip:127.0.32.1:demo", 60_000, { windowStart: now, count: 0 }); // nothing used
    table.put("ip:127.0.32.1:login", WINDOW_MS, { windowStart: now, count: 1 }); // a stale copy of the stored count
    const memory = new Map<string, unknown>([["buckets", table]]);
    await handOverBuckets((m) => m.get("buckets") as BucketTable, (id) => id)([{ id: owner, memory }], srv.db.sql, Date.now() + 2000);
    const rows = await srv.db.sql<{ bucket_id: string; used: number; durable: boolean; window_start: string }[]>`
      SELECT bucket_id, used, durable, window_start FROM rate_limit_buckets WHERE owner = ${owner} ORDER BY bucket_id`;
    expect(rows.map((r) => ({ id: r.bucket_id, used: r.used, durable: r.durable, start: Number(r.window_start) }))).toEqual([
      { id: "ip:127.0.32.1:global", used: 7, durable: false, start: now - 1000 },
      { id: "ip:127.0.32.1:login", used: 5, durable: true, start: now },
    ]);
  });

  test("rows whose window has ended are pruned; the others stay", async () => {
    const now = Date.now();
    await srv.db.sql`
      INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
      VALUES ('ip/127.0.33.1', 'ip:127.0.33.1:login', ${now - WINDOW_MS - 1}, ${now - 1}, 30, true),
             ('ip/127.0.33.2', 'ip:127.0.33.2:global', ${now - 60_001}, ${now - 1}, 9, false),
             ('ip/127.0.33.3', 'ip:127.0.33.3:login', ${now}, ${now + WINDOW_MS}, 2, true)`;
    await pruneEnded(srv.db.sql, true);
    const left = await srv.db.sql<{ owner: string }[]>`SELECT owner FROM rate_limit_buckets WHERE owner LIKE 'ip/127.0.33.%'`;
    expect(left.map((r) => r.owner)).toEqual(["ip/127.0.33.3"]);
  });
});
