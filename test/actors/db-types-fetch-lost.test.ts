/**
 * A pool connection that loses its socket while it fetches the array types (the statement postgres.js runs first on
 * every new connection), and the database then refuses connections: the escape docs/review.md left known ("an
 * uncaught connection error can escape postgres.js while the database refuses connections", 2 runs in ~28 of
 * test/http/db-outage.test.ts with short deadlines). postgres.js 3.4.9 awaited that statement in fetchArrayTypes(),
 * whose promise nothing handled: the lost socket left the statement pending, the refused reconnect failed it, and its
 * ECONNREFUSED escaped as an unhandled rejection, which ends a Bun process (the production process guard logged and
 * survived it). patches/postgres@3.4.9.patch drops that promise's rejection: the query waiting for the connection
 * gets the same error.
 *
 * Run in a child process that counts process.on("unhandledRejection"/"uncaughtException") events: bun test does not
 * call those listeners, it fails whichever test is running.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

let dir: string;
let script: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-test-types-lost-"));
  script = join(dir, "types-lost.ts");
  const root = resolve(import.meta.dir, "../..");
  await writeFile(
    script,
    `import { connect } from ${JSON.stringify(join(root, "infra/db.ts"))};
import { serverUrl } from ${JSON.stringify(join(root, "test/helpers/db.ts"))};
import { PgProxy } from ${JSON.stringify(join(root, "test/helpers/pg-proxy.ts"))};
const escaped: { kind: string; code: unknown }[] = [];
for (const kind of ["unhandledRejection", "uncaughtException"])
  process.on(kind, (e: unknown) => void escaped.push({ kind, code: (e as { code?: unknown } | null)?.code ?? String(e) }));
/** A query's outcome: its one value, its error code, or "no answer" within 5 s. */
const outcome = (q: PromiseLike<unknown>) =>
  Promise.race([
    Promise.resolve(q).then((rows) => (rows as { n: number }[])[0].n, (e: { code?: string }) => e.code ?? String(e)),
    Bun.sleep(5000).then(() => "no answer"),
  ]);
const proxy = await PgProxy.toTestServer();
const sql = connect(proxy.via(await serverUrl()), 1, { queryDeadlineMs: 0 });
// the pool's only connection opens for this query; its socket is dropped once the array types query went out
const lost = proxy.loseReplyAfter("pg_catalog.pg_type", 50);
const first = outcome(sql\`SELECT 1 AS n\`);
await lost;
await proxy.down(); // before postgres.js sees the close: its reconnect is refused
const during = await first;
await Bun.sleep(300); // any escape is reported by now
await proxy.up();
const after = await outcome(sql\`SELECT 2 AS n\`);
console.log(JSON.stringify({ during, after, escaped }));
await sql.end({ timeout: 1 });
await proxy.down();
process.exit(0);
`,
  );
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("a connection lost while it fetched the array types, reconnecting to a database that refuses, lets no error escape: the waiting query fails with ECONNREFUSED and the pool answers once the database is back", async () => {
  const proc = Bun.spawn(["bun", script], { stdout: "pipe", stderr: "pipe", env: { ...process.env, LOG_LEVEL: "silent" } });
  const [stdout, stderr, exit] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect({ exit, stderr: exit === 0 ? "" : stderr }).toEqual({ exit: 0, stderr: "" });
  const line = stdout.split("\n").find((l) => l.startsWith("{"));
  expect(JSON.parse(line ?? "null")).toEqual({ during: "ECONNREFUSED", after: 2, escaped: [] });
}, 30_000);
