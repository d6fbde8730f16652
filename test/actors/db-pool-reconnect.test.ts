/**
 * Two ways postgres.js 3.4.9 lost a pool connection, both fixed by patches/postgres@3.4.9.patch:
 * - It batches a connection's small writes behind a setImmediate and, when the socket closes before that immediate
 *   ran, cancels it without forgetting it (`nextWriteTimer` stays set, the unsent bytes stay buffered). When the pool
 *   reopens that connection, its startup message waits behind the forgotten immediate: the query behind it fails
 *   CONNECT_TIMEOUT after connect_timeout (10 s). An outage that closes connections with requests in flight made the
 *   first request after recovery take 10 s (test/http/db-outage-loops.test.ts, seen in CI under load).
 * - A query our deadline withdraws (infra/db.ts armDeadline: cancel() before it was sent) while it is the query its
 *   connection is opening for is skipped once the connection is open, and the connection was then left among the
 *   connecting ones for good: never handed another query, the pool one connection smaller each time.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import net from "node:net";
import { connect, DatabaseUnavailableError, isNeverSent, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";

let db: TestDatabase;
let sql: Sql | undefined;

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
}, 60_000);

afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await db?.drop();
});

/** The sockets the pool opens (its own: postgres.js gives no handle on them), recorded while `fn` runs. */
async function recordingSockets<T>(fn: (sockets: net.Socket[]) => Promise<T>): Promise<T> {
  const sockets: net.Socket[] = [];
  const original = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    sockets.push(this);
    return (original as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof original;
  try {
    return await fn(sockets);
  } finally {
    net.Socket.prototype.connect = original;
  }
}

test("a connection that drops with a statement not yet written reconnects and answers the next query at once", async () => {
  await recordingSockets(async (sockets) => {
    sql = connect(db.url, 1, { queryDeadlineMs: 0 });
    await sql`SELECT 1`;
    expect(sockets.length).toBe(1);
    // the statement is buffered for the next immediate; the socket closes first (as when the server goes away)
    const lost = sql`SELECT 2`.then(
      () => "answered",
      (e: { code?: string }) => e.code,
    );
    sockets[0].destroy();
    expect(await lost).toBe("CONNECTION_CLOSED");
    const t0 = performance.now();
    const answer = await sql`SELECT 3 AS n`.then(
      (rows) => rows[0].n as number,
      (e: { code?: string }) => e.code,
    );
    expect({ answer, fast: performance.now() - t0 < 3000 }).toEqual({ answer: 3, fast: true });
  });
}, 30_000);

test("a query withdrawn by the deadline while its connection was still opening leaves that connection to the pool", async () => {
  const proxy = await PgProxy.toTestServer();
  const pool = connect(proxy.via(db.url), 1, { queryDeadlineMs: 1000 });
  try {
    // the pool's only connection opens for this query, and the database does not answer (a stall): the deadline
    // withdraws the query before the connection could take it
    proxy.stall();
    const withdrawn = await pool`SELECT 1`.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(withdrawn).toBeInstanceOf(DatabaseUnavailableError);
    expect(isNeverSent(withdrawn)).toBe(true);
    proxy.resume(); // the connection opens now, with nothing to run
    const answer = await pool`SELECT 2 AS n`.then(
      (rows) => rows[0].n as number,
      (e: { code?: string }) => e.code,
    );
    expect(answer).toBe(2);
  } finally {
    await pool.end({ timeout: 1 });
    await proxy.down();
  }
}, 30_000);
