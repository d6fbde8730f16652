/**
 * `bun run seed -- --products N --merchants M` as the README writes it (audit U LOW-2): without DATABASE_URL it uses
 * the embedded default's Postgres in DATA_DIR (started for the seed when the service is stopped, the running one
 * otherwise), and a synthetic seed leaves an operator who can log in.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connect, startEmbeddedPostgres } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const root = resolve(import.meta.dir, "../..");
const cleanups: (() => Promise<void> | void)[] = [];

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The seed CLI with only these variables: no DATABASE_URL from the test runner's environment. */
function seed(args: string[], env: Record<string, string> = {}) {
  const r = Bun.spawnSync(["bun", "infra/seed/cli.ts", ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", LOG_LEVEL: "warn", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, err: r.stderr.toString() };
}

async function operatorCanLogIn(sql: ReturnType<typeof connect>, email: string, password: string): Promise<boolean> {
  const rows = await sql<{ password_hash: string }[]>`SELECT password_hash FROM users WHERE email = ${email} AND role = 'operator'`;
  return rows.length === 1 && (await Bun.password.verify(password, rows[0]!.password_hash));
}

describe("the synthetic seed", () => {
  test("into a database without users it also creates the operator account, once", async () => {
    const db: TestDatabase = await createTestDatabase();
    cleanups.push(() => db.drop());
    const first = seed(["--database-url", db.url, "--products", "20", "--merchants", "1"]);
    expect(first.code).toBe(0);
    expect(first.err).toContain("created admin@example.com");
    expect(await operatorCanLogIn(db.sql, "admin@example.com", "admin-password")).toBe(true);
    const [stores] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM stores WHERE slug LIKE 'synth-%'`;
    expect(stores!.n).toBe(1);
    // an operator exists now: the demo seed (stores exist) and later runs leave the accounts alone
    expect(seed(["--database-url", db.url]).code).toBe(0);
    const [users] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM users`;
    expect(users!.n).toBe(1);
  }, 60_000);

  test("with --admin-email and --admin-password the operator has those", async () => {
    const db: TestDatabase = await createTestDatabase();
    cleanups.push(() => db.drop());
    const r = seed(["--database-url", db.url, "--products", "5", "--merchants", "1", "--admin-email", "ops@example.org", "--admin-password", "correct-horse-9"]);
    expect(r.code).toBe(0);
    expect(await operatorCanLogIn(db.sql, "ops@example.org", "correct-horse-9")).toBe(true);
  }, 60_000);
});

describe("without DATABASE_URL", () => {
  test("it seeds the embedded Postgres of DATA_DIR: started for it on a fresh directory, the running one after", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "acs-seed-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));

    const fresh = seed(["--products", "20", "--merchants", "2"], { DATA_DIR: dataDir });
    expect(fresh.err).toContain("starting the embedded Postgres");
    expect(fresh.code).toBe(0);
    // stopped again: nothing holds the data directory
    expect(existsSync(join(dataDir, "pg", "postmaster.pid"))).toBe(false);

    // as `bun run start` would: the embedded Postgres of that directory, running
    const pg = await startEmbeddedPostgres(join(dataDir, "pg"));
    const sql = connect(pg.url, 2);
    cleanups.push(async () => {
      await sql.end({ timeout: 2 });
      await pg.stop();
    });
    const [products] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products`;
    expect(products!.n).toBe(20);
    expect(await operatorCanLogIn(sql, "admin@example.com", "admin-password")).toBe(true);

    const running = seed(["--data-dir", dataDir]);
    expect(running.code).toBe(0);
    expect(running.err).toContain("using the running embedded Postgres");
    expect(running.err).toContain("already has stores");
  }, 120_000);
});
