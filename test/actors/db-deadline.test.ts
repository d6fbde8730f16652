/**
 * The pool's query deadline (infra/db.ts) answers a slow query's caller with QUERY_DEADLINE and leaves the
 * connection in step: queries pipelined behind the slow one, and the traffic that follows, each get their own
 * answer (review of 3b10258: cancelling queries a connection had already taken handed later queries the wrong rows).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;
let sql: Sql;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  sql = connect(db.url, 1, { queryDeadlineMs: 300 });
}, 60_000);
afterAll(async () => {
  await sql.end({ timeout: 1 });
  await db.drop();
});

test("a slow query past the deadline fails with QUERY_DEADLINE and every later query still gets its own rows", async () => {
  const A = (n: number) => sql`SELECT ${n}::int AS a`;
  const B = (n: number) => sql`SELECT ${n}::int AS b, 'x' AS extra`;
  await Promise.all([A(0), B(1)]); // both statements prepared
  const slow = sql`SELECT pg_sleep(1)`.then(
    () => "answered",
    (e: { code?: string }) => e.code,
  );
  // pipelined behind the slow statement on the one connection
  const followers = Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? B(100 + i) : A(100 + i)).then((rows) => rows, (e: { code?: string }) => e.code)));
  expect(await slow).toBe("QUERY_DEADLINE");
  await followers;
  // traffic goes on while the slow statement still runs: a query may time out too, but never gets another's rows
  const run = async (rounds: number, deadlineOk: boolean) => {
    const problems: string[] = [];
    for (let r = 0; r < rounds; r++) {
      await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const n = 1000 + r * 10 + i;
          const [col, rows] = n % 2 ? ["b", await B(n).catch((e: { code?: string }) => e)] : ["a", await A(n).catch((e: { code?: string }) => e)];
          if (!Array.isArray(rows)) {
            if (!(deadlineOk && (rows as { code?: string }).code === "QUERY_DEADLINE")) problems.push(`query ${n} failed: ${String(rows)}`);
            return;
          }
          const got = (rows[0] as Record<string, unknown> | undefined)?.[col];
          if (got !== n) problems.push(`query ${n} got ${JSON.stringify(rows)}`);
        }),
      );
    }
    return problems;
  };
  expect(await run(4, true)).toEqual([]);
  await Bun.sleep(1200); // the slow statement has finished on the server
  expect(await run(4, false)).toEqual([]);
}, 30_000);
