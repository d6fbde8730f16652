/**
 * What the stored rate-limit buckets cost and how they stay right (review RQ of the Z-1 fix; actors/ip/stored-buckets.ts):
 * loads are skipped when no row can exist (LOW-4) and hold at most two pooled connections while they wait (MED-2); a
 * refusal the owners already know writes nothing (MED-3); a hand-over never lowers a live count (LOW-5); a catch-up
 * adds what an activation counted to what the previous owner handed over late (MED-1's arithmetic; the restarts
 * themselves are test/distributed/rate-limit-restart-traffic.test.ts); a message type the host does not know is a retryable 503
 * (LOW-6, a rolling upgrade).
 *
 * One server; requests come from 127.0.8x.y source addresses (node:http `localAddress`), so each test has buckets of
 * its own. Table reads are counted from pg_stat_user_tables (flushed by the server's backends within a second or so).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http from "node:http";
import postgres from "postgres";
import { BucketTable } from "../../actors/agent/buckets.ts";
import { GLOBAL_LIMIT } from "../../actors/agent/limits.ts";
import { catchUpBuckets, handOverBuckets, loadStoredBuckets, notePlacementChange } from "../../actors/ip/stored-buckets.ts";
import { log } from "../../infra/log.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const PER_EMAIL = 5;
const W = GLOBAL_LIMIT.windowMs;

let srv: TestServer;
let startedAt = 0;
beforeAll(async () => {
  srv = await startServer({ config: { LOGIN_LIMIT_PER_IP: 30, LOGIN_LIMIT_PER_EMAIL: PER_EMAIL } });
  startedAt = Date.now();
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

interface Answer {
  status: number;
  code?: string;
  headers: http.IncomingHttpHeaders;
  ms: number;
}

/** A request from the given loopback source address. */
function requestFrom(from: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const url = new URL(srv.url);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: Number(url.port), path, method, headers: body === undefined ? {} : { "content-type": "application/json" }, localAddress: from },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, code: text ? JSON.parse(text).code : undefined, headers: res.headers, ms: performance.now() - t0 }));
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Index and sequential scans of rate_limit_buckets so far, once the server's backends have flushed their counts. */
async function tableReads(): Promise<number> {
  await Bun.sleep(2500);
  await srv.db.sql`SELECT pg_stat_clear_snapshot()`;
  const [t] = await srv.db.sql<{ n: string }[]>`
    SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS n FROM pg_stat_user_tables WHERE relname = 'rate_limit_buckets'`;
  return Number(t!.n);
}

describe("loading stored buckets", () => {
  test("once start-up has settled, first requests from new addresses read no stored buckets when none can exist", async () => {
    // start-up is a placement change: every load reads until the rows handed over by then are measured (3.5 s on)
    await Bun.sleep(Math.max(0, startedAt + 3_700 - Date.now()));
    expect((await requestFrom("127.0.80.1", "GET", "/api/v1/nope")).status).toBe(404);
    const before = await tableReads();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => requestFrom(`127.0.80.${10 + i}`, "GET", "/api/v1/nope")));
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(404));
    expect((await tableReads()) - before).toBe(0);
  }, 30_000);

  test("loads that meet a locked table wait for the lock in at most two pooled connections: an active address is not held up, and every waiting one is answered once the lock clears", async () => {
    expect((await requestFrom("127.0.81.1", "GET", "/api/v1/merchants")).status).toBe(200);
    notePlacementChange(); // as after a partition move: every new activation reads its rows
    const other = postgres(srv.db.url, { max: 1 });
    try {
      await other`SELECT 1`;
      const locked = other.begin(async (tx) => {
        await tx`LOCK TABLE rate_limit_buckets IN ACCESS EXCLUSIVE MODE`;
        await Bun.sleep(4000);
      });
      await Bun.sleep(200);
      const flood = Promise.all(Array.from({ length: 40 }, (_, i) => requestFrom(`127.0.82.${i + 1}`, "GET", "/api/v1/nope")));
      await Bun.sleep(800);
      // an address already active: its request needs a pooled connection (the merchants list), not the locked table
      const existing = await requestFrom("127.0.81.1", "GET", "/api/v1/merchants");
      expect(existing.status).toBe(200);
      expect(existing.ms).toBeLessThan(1500);
      const answers = await flood;
      expect(answers.map((a) => a.status)).toEqual(Array(40).fill(404));
      await locked;
    } finally {
      await other.end();
    }
  }, 30_000);
});

describe("the log-in buckets", () => {
  test("hammering an account whose per-e-mail bucket is full writes nothing: 429 from what the owners know", async () => {
    const victim = "hammered@example.com";
    for (let i = 1; i <= PER_EMAIL; i++) {
      expect((await requestFrom(`127.0.83.${i}`, "POST", "/api/v1/auth/login", { email: victim, password: "wrong-password" })).status).toBe(401);
    }
    const [row] = await srv.db.sql<{ used: number; xmin: string }[]>`SELECT used, xmin::text FROM rate_limit_buckets WHERE owner LIKE 'login/%' AND used = ${PER_EMAIL}`;
    expect(row?.used).toBe(PER_EMAIL);
    for (let i = 0; i < 20; i++) {
      const r = await requestFrom("127.0.84.1", "POST", "/api/v1/auth/login", { email: victim, password: `guess-${i}` });
      expect({ status: r.status, code: r.code, limit: r.headers["x-ratelimit-limit"], remaining: r.headers["x-ratelimit-remaining"] }).toEqual({
        status: 429,
        code: "rate_limit_exceeded",
        limit: String(PER_EMAIL),
        remaining: "0",
      });
      expect(Number(r.headers["retry-after"])).toBeGreaterThan(0);
    }
    // the address's unit was never written (before: written, then given back, on every attempt) and the account's
    // row is the very version the fifth failure wrote
    expect([...(await srv.db.sql`SELECT used FROM rate_limit_buckets WHERE owner = 'ip/127.0.84.1'`)]).toEqual([]);
    const [same] = await srv.db.sql<{ used: number; xmin: string }[]>`SELECT used, xmin::text FROM rate_limit_buckets WHERE owner LIKE 'login/%' AND used = ${PER_EMAIL}`;
    expect(same).toEqual(row!);
  }, 30_000);
});

describe("hand-over and catch-up", () => {
  const handOver = handOverBuckets((m) => m.get("buckets") as BucketTable | undefined, (id) => id);
  const catchUp = catchUpBuckets((m) => m.get("buckets") as BucketTable | undefined, (id) => id);

  test("a hand-over never lowers a stored count whose window runs, and replaces one whose window has ended", async () => {
    const now = Date.now();
    const bucket = (addr: string) => `ip:${addr}:global`;
    // 480 of 500 handed over by one host; an activation that started empty (its load ran out of time) counted 5
    await srv.db.sql`INSERT INTO rate_limit_buckets VALUES ('ip/127.0.85.1', ${bucket("127.0.85.1")}, ${now - 60_000}, ${now - 60_000 + W}, 480, false)`;
    // an ended window's 400 and a new window's 3
    await srv.db.sql`INSERT INTO rate_limit_buckets VALUES ('ip/127.0.85.2', ${bucket("127.0.85.2")}, ${now - W - 1000}, ${now - 1000}, 400, false)`;
    const five = new BucketTable();
    five.put(bucket("127.0.85.1"), W, { windowStart: now, count: 5 });
    const three = new BucketTable();
    three.put(bucket("127.0.85.2"), W, { windowStart: now, count: 3 });
    await handOver(
      [
        { id: "ip/127.0.85.1", memory: new Map([["buckets", five]]) },
        { id: "ip/127.0.85.2", memory: new Map([["buckets", three]]) },
      ],
      srv.db.sql,
      Date.now() + 2000,
    );
    const rows = await srv.db.sql<{ owner: string; used: number; window_start: string }[]>`
      SELECT owner, used, window_start::text FROM rate_limit_buckets WHERE owner IN ('ip/127.0.85.1', 'ip/127.0.85.2') ORDER BY owner`;
    expect([...rows]).toEqual([
      { owner: "ip/127.0.85.1", used: 480, window_start: String(now - 60_000) },
      { owner: "ip/127.0.85.2", used: 3, window_start: String(now) },
    ]);
  });

  test("a catch-up adds what an activation counted since its load to the count its previous owner handed over later", async () => {
    const owner = "ip/127.0.86.1";
    const id = "ip:127.0.86.1:global";
    const spec = { id, limit: GLOBAL_LIMIT.limit, windowMs: W };
    const start = Date.now() - 60_000;
    // the row of the previous stop: 275
    await srv.db.sql`INSERT INTO rate_limit_buckets VALUES (${owner}, ${id}, ${start}, ${start + W}, 275, false)`;
    notePlacementChange();
    const joiner = new BucketTable();
    await loadStoredBuckets(srv.db.sql, owner, joiner, log);
    for (let i = 0; i < 10; i++) expect(joiner.admit([spec]).allowed).toBe(true);
    // the old owner's hand-over of 359 lands after the joiner loaded
    const old = new BucketTable();
    old.put(id, W, { windowStart: start, count: 359 });
    await handOver([{ id: owner, memory: new Map([["buckets", old]]) }], srv.db.sql, Date.now() + 2000);
    await catchUp([{ id: owner, memory: new Map([["buckets", joiner]]) }], srv.db.sql);
    const expected = { id, limit: GLOBAL_LIMIT.limit, remaining: GLOBAL_LIMIT.limit - 369, reset: Math.ceil((start + W) / 1000) };
    expect(joiner.peek(spec)).toEqual(expected);
    // the next catch-up reads the same row: nothing more is added
    await catchUp([{ id: owner, memory: new Map([["buckets", joiner]]) }], srv.db.sql);
    expect(joiner.peek(spec)).toEqual(expected);
  });
});

describe("a rolling upgrade", () => {
  test("a message type the actor host does not know is a retryable 503 in fixed words, not a 400 naming it", async () => {
    const reply = await srv.running.host!.dispatch({ msgId: "ai-upgrade-1", kind: "ip", id: "127.0.87.1", type: "admitLater", body: {}, deadline: Date.now() + 5000, attempt: 1 });
    expect(reply).toEqual({ ok: false, error: { code: "service_unavailable", message: "This part of the service is being upgraded; retry shortly." } });
  });
});
