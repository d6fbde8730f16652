/**
 * The real entry point (`bun gateway/main.ts start`, a separate process) through a database outage: a stall with
 * requests in flight, then refused connections while reads and cart writes keep coming, then recovery. The process
 * must keep running and serving, answer the outage with 503s (never 500), and its stderr must show no unhandled
 * rejection or uncaught exception (Bun's own report, or the process guard's "escaped its caller" line: either means a
 * database error reached no handler), and it must still shut down cleanly.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";
import { pumpLines } from "../helpers/role-process.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store product
const ROOT = resolve(import.meta.dir, "../..");

let db: TestDatabase;
let proxy: PgProxy;
let dataDir: string;
let proc: Subprocess<"ignore", "pipe", "pipe">;
let url = "";
const stderr: string[] = [];
let key: Record<string, string>;

async function json(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url + path, {
    method: init.method ?? "GET",
    headers: { ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as { code?: string; data?: Record<string, unknown> }) : undefined };
}

/** Collects stderr lines; resolves with the gateway's URL once it logs that it listens. */
async function follow(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Promise<string>((found) => {
    void pumpLines(stream, (line) => {
      stderr.push(line);
      const m = /"msg":"gateway listening".*"url":"([^"]+)"/.exec(line);
      if (m) found(m[1]!);
    });
  });
}

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded: a copy of a template (test/helpers/db.ts)
  proxy = await PgProxy.toTestServer();
  dataDir = await mkdtemp(join(tmpdir(), "acs-test-outage-proc-"));
  proc = Bun.spawn(["bun", "gateway/main.ts", "start"], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: {
      ...process.env,
      DATABASE_URL: proxy.via(db.url),
      NATS_URL: "",
      HOST: "127.0.0.1",
      PORT: "0",
      DATA_DIR: dataDir,
      SEED_DEMO: "true",
      LOG_LEVEL: "info",
      NODE_ENV: "test",
      RATE_LIMITS_ENABLED: "false",
    },
  });
  void new Response(proc.stdout).text();
  url = await Promise.race([
    follow(proc.stderr),
    Bun.sleep(60_000).then(() => Promise.reject(new Error(`the service did not start:\n${stderr.join("\n")}`))),
  ]);
  const login = await json("/api/v1/auth/login", { method: "POST", body: { email: "admin@example.com", password: "admin-password" } });
  const created = await json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${login.body?.data?.token}` }, body: { name: "k", tier: "ENTERPRISE" } });
  key = { "x-agent-api-key": String(created.body?.data?.key) };
}, 120_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) proc.kill("SIGKILL");
  await proxy?.down().catch(() => {});
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

/** Reads and a cart write, all at once; each answer as "status code" and how long the slowest took. */
async function traffic(): Promise<{ answers: string[]; ms: number }> {
  const t0 = performance.now();
  const calls = [
    json("/api/v1/agent/merchants/demo-store", { headers: key }),
    json(`/api/v1/agent/products/${BOARD}`, { headers: key }),
    json("/api/v1/agent/search", { method: "POST", headers: key, body: { query: "board" } }),
    json("/api/v1/agent/cart", { method: "POST", headers: key, body: { items: [{ product_id: BOARD, quantity: 1 }] } }),
  ];
  const answers = (await Promise.all(calls)).map((r) => `${r.status}${r.status >= 400 ? ` ${r.body?.code}` : ""}`);
  return { answers, ms: performance.now() - t0 };
}
const SERVED = ["200", "200", "200", "201"];

test("the service process survives a stall and refused connections with nothing unhandled, answers 503 meanwhile, recovers and stops cleanly", async () => {
  expect((await traffic()).answers).toEqual(SERVED);

  // a stall with requests in flight (an actor turn may answer actor_unavailable at the client's 10 s), cut off by
  // refused connections
  proxy.stall();
  const inFlight = traffic();
  await Bun.sleep(2000);
  await proxy.down();
  const stalled = (await inFlight).answers;
  // refused: every answer that needs the database is 503 service_unavailable at once (search is served from the
  // in-memory index)
  const refused: { answers: string[]; ms: number }[] = [];
  const until = Date.now() + 4000;
  while (Date.now() < until) {
    refused.push(await traffic());
    await Bun.sleep(250);
  }
  await proxy.up();
  proxy.resume();
  let recovered: string[] = [];
  for (let i = 0; i < 60 && recovered.join() !== SERVED.join(); i++) {
    await Bun.sleep(250);
    recovered = (await traffic()).answers;
  }

  const problems = stderr.filter((l) => /escaped its caller|unhandledRejection|uncaughtException|Unhandled|^error:|^\s+at /i.test(l));
  expect(problems).toEqual([]);
  expect(proc.exitCode).toBeNull();
  expect(stalled.filter((a) => !a.startsWith("503") && a !== "200")).toEqual([]);
  expect(refused.length).toBeGreaterThan(0);
  for (const r of refused) {
    expect(r.answers).toEqual(["503 service_unavailable", "503 service_unavailable", "200", "503 service_unavailable"]);
    expect(r.ms).toBeLessThan(3000);
  }
  expect(recovered).toEqual(SERVED);

  proc.kill("SIGTERM");
  expect(await proc.exited).toBe(0);
}, 120_000);
