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
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, limit: 100, filters: { inStock: false } } });
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

interface OpenWriter {
  xid: string;
  pid: number;
  database: string;
  /** Ends the transaction: rolled back unless `commit`. */
  end: (commit?: boolean) => Promise<void>;
}

/**
 * An open transaction holding a transaction id (after `write`, if given, ran in it), until `end`, that the service's
 * snapshots list as running. Since PostgreSQL 14 a snapshot's xmax is the newest ENDED transaction's id + 1, not the
 * next id to be given out, so while no transaction begun after the writer has ended, the writer's id is at the
 * snapshot's xmax and in no running list (pg_current_snapshot() reads "id:id:"): the horizon sits at its id, but the
 * catch-up cannot tell it from a server with nothing open, and nothing is in the window. On a live server later
 * transactions end all the time; here one does, then the helper checks that the service's database sees the writer
 * as running (session 8's helper skipped that step, so its stall was never produced).
 */
async function openWriter(pool: Sql, write?: (conn: Sql) => Promise<unknown>): Promise<OpenWriter> {
  const conn = (await pool.reserve()) as unknown as Sql & { release(): void };
  try {
    await conn`BEGIN`;
    if (write) await write(conn);
    const [r] = await conn<{ xid: string; pid: number; database: string }[]>`
      SELECT pg_current_xact_id()::text AS xid, pg_backend_pid() AS pid, current_database() AS database`;
    await srv.db.sql`SELECT pg_current_xact_id()`; // a transaction begun after the writer, ended
    const [seen] = await srv.db.sql<{ running: boolean; xmin: string; xmax: string }[]>`
      SELECT ${r!.xid}::xid8 IN (SELECT pg_snapshot_xip(s)) AS running,
             pg_snapshot_xmin(s)::text AS xmin, pg_snapshot_xmax(s)::text AS xmax
      FROM pg_current_snapshot() s`;
    expect(seen).toMatchObject({ running: true }); // xmin <= its id < xmax, and listed
    return {
      ...r!,
      end: async (commit = false) => {
        try {
          await (commit ? conn`COMMIT` : conn`ROLLBACK`);
        } finally {
          conn.release();
        }
      },
    };
  } catch (e) {
    await conn`ROLLBACK`.catch(() => {});
    conn.release();
    throw e;
  }
}

const isStall = (l: Record<string, unknown>) => String(l.msg).includes("the horizon has not moved");

test("while a writer open in another database holds the horizon back, a changed product is read once, not by every pass", async () => {
  const writer = await openWriter(elsewhere);
  let ended = false;
  try {
    await pass(); // whatever start-up left
    const ids = await products(5, 0);
    await srv.db.sql`UPDATE products SET title = 'Wombatberry ' || title, updated_at = now() WHERE id = ANY(${ids}::uuid[])`;
    const first = await pass();
    expect(first.products).toBe(5);
    expect(await searchIds("Wombatberry")).toEqual(ids);
    for (let i = 0; i < 3; i++) {
      const again = await pass();
      // the open writer keeps the horizon at or below its id (an older transaction elsewhere may hold it lower)...
      expect(BigInt(service().horizon!) <= BigInt(writer.xid)).toBe(true);
      // ...so the changed rows stay in every pass's window, but none is read or re-indexed again
      expect(again.scanned).toBeGreaterThanOrEqual(5);
      expect(again.products).toBe(0);
    }
    expect(await searchIds("Wombatberry")).toEqual(ids);
    await writer.end();
    ended = true;
    // once it ends, the horizon moves past it and the window drains (waits out any older transaction elsewhere)
    await waitFor("the window to drain", async () => {
      const r = await pass();
      expect(r.products).toBe(0);
      return BigInt(service().horizon!) > BigInt(writer.xid) && r.scanned === 0;
    }, 20_000);
  } finally {
    if (!ended) await writer.end();
  }
}, 60_000);

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

/**
 * Passes (stall warnings on every pass) until one logs the stall at `xid`: another process's transaction older
 * than the writer (a parallel run on this shared server) holds the horizon first; the horizon never passes `xid`.
 */
async function stallAt(xid: string): Promise<Record<string, unknown>> {
  return waitFor("the stall warning at the writer's id", async () => {
    const { lines } = await warnings(pass);
    expect(BigInt(service().horizon!) <= BigInt(xid)).toBe(true);
    return lines.find((l) => isStall(l) && l.horizon === xid);
  }, 30_000);
}

test("a horizon an open writer holds in place is logged, naming the session that holds it", async () => {
  const writer = await openWriter(elsewhere);
  service().stallWarnMs = 0;
  let ended = false;
  try {
    const line = await stallAt(writer.xid);
    expect(line).toMatchObject({ level: "warn", horizon: writer.xid, heldForMs: expect.any(Number), prepared: [] });
    expect(line.sessions).toEqual([
      { pid: writer.pid, database: "postgres", user: expect.any(String), state: "idle in transaction", xactStart: expect.any(String) },
    ]);
    // held on: logged again (every stallWarnMs, 0 here), the horizon still at the writer
    const { lines } = await warnings(pass);
    expect(lines.filter(isStall)).toEqual([expect.objectContaining({ horizon: writer.xid, sessions: [expect.objectContaining({ pid: writer.pid })] })]);
    await writer.end();
    ended = true;
    // ended: the next pass moves the horizon past it and logs no stall
    const after = await warnings(pass);
    expect(BigInt(service().horizon!) > BigInt(writer.xid)).toBe(true);
    expect(after.lines.filter(isStall)).toEqual([]);
  } finally {
    service().stallWarnMs = 10 * 60_000;
    if (!ended) await writer.end();
  }
}, 60_000);

test("a product write left open in the service's database is named by the stall warning, and the first pass after it commits applies it", async () => {
  const [id] = await products(1, 40);
  const writer = await openWriter(srv.db.sql, (conn) => conn`UPDATE products SET title = 'Quokkaquince ' || title, updated_at = now() WHERE id = ${id!}`);
  service().stallWarnMs = 0;
  let ended = false;
  try {
    const line = await stallAt(writer.xid);
    expect(line.sessions).toEqual([expect.objectContaining({ pid: writer.pid, database: srv.db.name, state: "idle in transaction" })]);
    expect(await searchIds("Quokkaquince")).toEqual([]); // not committed
    await writer.end(true);
    ended = true;
    const r = await pass();
    expect(r.products).toBe(1);
    expect(await searchIds("Quokkaquince")).toEqual([id!]);
    expect(BigInt(service().horizon!) > BigInt(writer.xid)).toBe(true);
  } finally {
    service().stallWarnMs = 10 * 60_000;
    if (!ended) await writer.end();
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

test("a product write committed while a pass runs is not taken for rows restored from another server", async () => {
  await pass();
  const ids = await products(40, 50);
  await srv.db.sql`UPDATE products SET title = 'Numbatnut ' || title, updated_at = now() WHERE id = ANY(${ids}::uuid[])`;
  const [busy] = await products(1, 100);
  // a pass of 40 one-row pages, while another product is written and committed again and again (this server's ids,
  // handed out after the pass's snapshot: at or past its xmax)
  service().catchUpPageSize = 1;
  let writing = true;
  let commits = 0;
  const writes = (async () => {
    while (writing) {
      await srv.db.sql`UPDATE products SET updated_at = now() WHERE id = ${busy!}`;
      commits++;
    }
  })();
  let during: number;
  let lines: Record<string, unknown>[];
  try {
    await waitFor("the writes to start", () => commits > 0);
    const started = commits;
    ({ lines } = await warnings(pass));
    during = commits - started;
  } finally {
    writing = false;
    await writes;
    service().catchUpPageSize = 5000;
  }
  expect(during).toBeGreaterThanOrEqual(3); // the writes did commit while the pass ran
  expect(await searchIds("Numbatnut")).toEqual(ids);
  expect(lines.filter((l) => String(l.msg).includes("ahead of this server"))).toEqual([]);
}, 60_000);

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
