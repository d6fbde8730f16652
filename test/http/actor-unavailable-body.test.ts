/**
 * A 503 actor_unavailable made by the actor runtime says a fixed sentence. It used to pass internal text to API
 * clients: "could not activate cart/<id>: <the thrown error's message>" for an activation that failed, or "actor
 * agent/<the key's agent id> did not answer in 10000 ms" from the transport. The code stays; the actor and the error
 * go to the log (host.ts, actors/runtime/unavailable-text.ts).
 *
 * The real service (role start, in-process bus) reaches Postgres through a proxy the test controls
 * (test/helpers/pg-proxy.ts); idle activations passivate at once, so the next request for a cart loads it again.
 * Asks give up after 2 s instead of 10 s (ACTOR_ASK_TIMEOUT_MS): both cases answer at that deadline.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Running } from "../../gateway/boot.ts";
import { NO_ANSWER_TEXT, UNAVAILABLE_TEXT } from "../../actors/runtime/unavailable-text.ts";
import { setLogSink } from "../../infra/log.ts";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";
import { bootService, serverHandle, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, in stock

let db: TestDatabase;
let proxy: PgProxy;
let running: Running;
let dataDir: string;
let srv: TestServer;
let key: TestKey;
const logLines: string[] = [];
let restoreSink: () => void = () => {};

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded: a copy of a template (test/helpers/db.ts)
  proxy = await PgProxy.toTestServer();
  dataDir = await mkdtemp(join(tmpdir(), "acs-g4-"));
  restoreSink = setLogSink((line) => void logLines.push(line));
  running = await bootService({
    databaseUrl: proxy.via(db.url),
    dataDir,
    config: { SEED_DEMO: true, LOG_LEVEL: "info", RATE_LIMITS_ENABLED: false, ACTOR_IDLE_MS: 100, ACTOR_ASK_TIMEOUT_MS: 2_000 },
  });
  srv = serverHandle(running, db);
  key = await createKey(srv, { scopes: ["cart"] });
}, 120_000);

afterAll(async () => {
  proxy?.resume();
  await running?.stop().catch(() => {});
  restoreSink();
  await proxy?.down().catch(() => {});
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

async function newCart(): Promise<string> {
  const created = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(created.status).toBe(201);
  await Bun.sleep(400); // its activation has passivated: the next request loads it
  return created.body.data.id;
}

/** The body of a 503 that must not show the service's internals. */
function expectNeutral(text: string, id: string, message: string): void {
  expect(JSON.parse(text)).toMatchObject({ success: false, code: "actor_unavailable", error: message });
  expect(text).not.toContain(id);
  expect(text).not.toMatch(/\b(cart|agent|store)\//); // before: "actor agent/<key's agent id> did not answer in 10000 ms"
  expect(text).not.toMatch(/\d+ ms/);
}

describe("a 503 actor_unavailable body", () => {
  test("of a cart whose activation fails says a fixed sentence; the actor and the error go to the log", async () => {
    const id = await newCart();
    // a state its onActivate cannot read: the activation throws a TypeError on every load
    await db.sql`UPDATE actor_state SET state = 'null'::jsonb WHERE kind = 'cart' AND id = ${id}`;
    const res = await srv.fetch(`/api/v1/agent/cart/${id}`, { headers: key.headers });
    const text = await res.text();
    expect(res.status).toBe(503);
    expectNeutral(text, id, UNAVAILABLE_TEXT);
    expect(text).not.toContain("null is not an object");
    expect(text).not.toContain("activate");
    const logged = logLines.filter((l) => l.includes("could not activate an actor") && l.includes(id));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged[0]).toContain("null is not an object");
  }, 60_000);

  test("of a cart whose load the database does not answer (a stall) says a fixed sentence, not the actor or the wait", async () => {
    const id = await newCart();
    expect((await srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers })).status).toBe(200); // the key is known
    await Bun.sleep(400);
    proxy.stall();
    let text: string;
    let status: number;
    try {
      const res = await srv.fetch(`/api/v1/agent/cart/${id}`, { headers: key.headers });
      status = res.status;
      text = await res.text();
    } finally {
      proxy.resume();
    }
    expect(status).toBe(503);
    expectNeutral(text, id, NO_ANSWER_TEXT);
  }, 60_000);
});
