/**
 * Review RS of the search catch-up's transaction-id horizon (audit Z-2): a pass re-read and re-indexed every row at
 * or past its horizon, unpaged. The horizon is the server's (an open writer in ANY database holds it back), so one
 * idle-in-transaction session anywhere made every pass re-index every row changed since it began (RS-4); and rows
 * restored by pg_dump from another server keep that server's transaction ids, ahead of this one's, so every pass
 * re-indexed them until this server's counter passed them (RS-3). A pass now scans (change_xid, id) in pages and
 * reads only the rows whose change_xid is not the one it applied; ids ahead of the server are left out (logged once);
 * a horizon held in place is logged naming its session. The operator's reindex runs in the indexer's queue.
 *
 * Writes here are plain SQL: no catalog.changed event, as when an event is lost.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, type Sql } from "../../infra/db.ts";
import { setLogLevel, setLogSink } from "../../infra/log.ts";
import { getIndexer } from "../../search/indexer.ts";
import { getSearchService } from "../../search/service.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { serverUrl } from "../helpers/db.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

let srv: TestServer;
let key: TestKey;
let elsewhere: Sql;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  elsewhere = connect(await serverUrl(), 1); // the server's `postgres` database, not the service's
  // no periodic pass (nor event) of the service's own: every pass here is the test's, counted
  await getIndexer(srv.running.services)!.detach();
}, 60_000);
afterAll(async () => {
  await elsewhere?.end({ timeout: 1 });
  await srv?.stop();
});

const service = () => getSearchService(srv.running.services);
const indexer = () => getIndexer(srv.running.services)!;
/** One catch-up pass in the indexer's queue, with what it scanned and read. */
const pass = () => indexer().run("test catch-up", () => service().catchUp(srv.db.sql));

async function searchIds(query: string): Promise<string[]> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: false } } });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  return (r.body.data.products as { id: string }[]).map((p) => p.id).sort();
}

/** Products of the demo store (found by an agent's search), in id order from `offset`. */
async function products(n: number, offset: number): Promise<string[]> {
  const rows = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE active AND store_slug = 'demo-store' ORDER BY id OFFSET ${offset} LIMIT ${n}`;
  expect(rows.length).toBe(n);
  return rows.map((r) => r.id).sort();
}

/** Captures the warn lines logged while `fn` runs. */
async function warnings<T>(fn: () => Promise<T>): Promise<{ value: T; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  setLogLevel("warn");
  const restore = setLogSink((line) => lines.push(JSON.parse(line)));
  try {
    return { value: await fn(), lines };
  } finally {
    restore();
    setLogLevel("error");
  }
}

/** A transaction in the server's `postgres` database holding a transaction id, open until `end`. */
async function openWriterElsewhere(): Promise<{ xid: string; pid: number; end: () => Promise<void> }> {
  const conn = await elsewhere.reserve();
  await conn`BEGIN`;
  const [r] = await conn<{ xid: string; pid: number }[]>`SELECT pg_current_xact_id()::text AS xid, pg_backend_pid() AS pid`;
  return {
    ...r!,
    end: async () => {
      await conn`ROLLBACK`;
      conn.release();
    },
  };
}

test("while a writer open in another database holds the horizon back, a changed product is read once, not by every pass", async () => {
  const writer = await openWriterElsewhere();
  try {
    await pass(); // whatever start-up left
    const ids = await products(5, 0);
    await srv.db.sql`UPDATE products SET title = 'Wombatberry ' || title, updated_at = now() WHERE id = ANY(${ids}::uuid[])`;
    const first = await pass();
    expect(first.products).toBe(5);
    expect(await searchIds("Wombatberry")).toEqual(ids);
    for (let i = 0; i < 2; i++) {
      const again = await pass();
      // still in the window (the open writer keeps the horizon at or below its id), but not read or re-indexed again
      expect(again.scanned).toBeGreaterThanOrEqual(5);
      expect(again.products).toBe(0);
    }
    expect(BigInt(service().horizon!) <= BigInt(writer.xid)).toBe(true);
  } finally {
    await writer.end();
  }
});

test("a pass reads every changed product across several pages of its scan", async () => {
  const ids = await products(7, 10);
  service().catchUpPageSize = 2;
  try {
    await srv.db.sql`UPDATE products SET title = 'Capybarleaf ' || title, updated_at = now() WHERE id = ANY(${ids}::uuid[])`;
    const r = await pass();
    expect(r.products).toBe(7);
    expect(await searchIds("Capybarleaf")).toEqual(ids);
  } finally {
    service().catchUpPageSize = 5000;
  }
});

// Skipped (session 8, team lead): on this machine the writer opened by openWriterElsewhere does not show as running in
// the test database's snapshot (pg_current_snapshot() gives xmin = xmax = the writer's id), so the horizon never stalls
// and no warning is logged, alone or in the suite; the warning's code (SearchService.watchHorizon) is unchanged and
// untested until the writer helper holds its xid visibly. Left in docs/review.md.
test.skip("a horizon an open writer holds in place is logged, naming the session that holds it", async () => {
  const writer = await openWriterElsewhere();
  service().stallWarnMs = 0;
  try {
    // Other processes' transactions on this shared server (a parallel suite) may be older than the writer and hold
    // the horizon instead: the warning then names them. Whatever holds it, the line names the horizon and its holders.
    const line = await waitFor("the stall warning", async () => {
      const { lines } = await warnings(pass);
      return lines.find((l) => String(l.msg).includes("horizon has not moved") && Array.isArray(l.sessions) && (l.sessions as unknown[]).length > 0);
    }, 20_000);
    expect(line).toMatchObject({ level: "warn", prepared: [] });
    expect(BigInt(String(line.horizon)) <= BigInt(writer.xid)).toBe(true);
    const sessions = line.sessions as { pid: number; database: string }[];
    for (const s of sessions) expect(s).toMatchObject({ pid: expect.any(Number), database: expect.any(String) });
    // when the writer is the oldest, it is the one named
    if (String(line.horizon) === writer.xid) expect(sessions).toContainEqual(expect.objectContaining({ pid: writer.pid, database: "postgres" }));
  } finally {
    service().stallWarnMs = 10 * 60_000;
    await writer.end();
  }
}, 60_000);

test("the operator's reindex waits for the index changes queued before it instead of interleaving with them", async () => {
  const gate = Promise.withResolvers<void>();
  const blocked = indexer().run("test gate", () => gate.promise);
  const admin = { authorization: `Bearer ${await login(srv)}` };
  let answered = false;
  const reindex = srv.json("/api/v1/admin/search/reindex", { method: "POST", headers: admin }).finally(() => {
    answered = true;
  });
  try {
    await Bun.sleep(500);
    expect(answered).toBe(false);
  } finally {
    gate.resolve();
  }
  await blocked;
  const r = await reindex;
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE active`;
  expect(r.body.data.products).toBe(n);
});

test("rows restored from another server carry transaction ids ahead of this one: the catch-up leaves them out and says so once", async () => {
  await pass();
  // what pg_dump's restore leaves: the data copied before the trigger exists, with the source server's ids
  await srv.db.sql.begin(async (tx) => {
    await tx`ALTER TABLE products DISABLE TRIGGER products_change_xid`;
    await tx`UPDATE products SET change_xid = (pg_current_xact_id()::text::bigint + 50000000)::text::xid8`;
    await tx`ALTER TABLE products ENABLE TRIGGER products_change_xid`;
  });
  const { value: passes, lines } = await warnings(async () => [await pass(), await pass(), await pass()]);
  expect(passes.map((p) => p.products)).toEqual([0, 0, 0]);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products`;
  const ahead = lines.filter((l) => String(l.msg).includes("ahead of this server"));
  expect(ahead).toHaveLength(1);
  expect(ahead[0]).toMatchObject({ level: "warn", products: n });
  // a local write of a restored row gives it this server's id: the next pass reads it
  const [id] = await products(1, 20);
  await srv.db.sql`UPDATE products SET title = 'Pangolinpeach ' || title, updated_at = now() WHERE id = ${id!}`;
  expect((await pass()).products).toBe(1);
  expect(await searchIds("Pangolinpeach")).toEqual([id!]);
});
