/**
 * Audit M-5: docs/operations.md "Start order" step 4 seeds a distributed deployment with
 * `DATABASE_URL=… bun run seed -- --migrate`. With NODE_ENV=production, and ADMIN_EMAIL / ADMIN_PASSWORD set in the
 * environment (the README's config table calls them the seeded operator's; every production gateway and actor host
 * warns until they are changed), the seed ignores both and creates the operator admin@example.com / admin-password,
 * plus the demo merchants owner@<slug>.example / merchant-password, silently, exit 0. A production deployment
 * following the docs has a publicly known operator password while its start-up warning has gone quiet.
 * Expected: the seed uses ADMIN_EMAIL / ADMIN_PASSWORD when set (flags first), and with NODE_ENV=production refuses
 * (exit 1, one line) to create any account with a dev-only default password.
 * Run: cp into test/cli/ and `bun test/run.ts test/cli/seed-production-default-credentials.test.ts`.
 */
import { afterAll, expect, test } from "bun:test";
import { resolve } from "node:path";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const root = resolve(import.meta.dir, "../..");
const dbs: TestDatabase[] = [];
afterAll(async () => {
  for (const d of dbs) await d.drop();
});

function seed(args: string[], env: Record<string, string>) {
  const r = Bun.spawnSync(["bun", "infra/seed/cli.ts", ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", LOG_LEVEL: "warn", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, err: r.stderr.toString() };
}

async function canLogIn(db: TestDatabase, email: string, password: string): Promise<boolean> {
  const rows = await db.sql<{ password_hash: string }[]>`SELECT password_hash FROM users WHERE lower(email) = lower(${email})`;
  return rows.length === 1 && (await Bun.password.verify(password, rows[0]!.password_hash));
}

test("the documented production seed never leaves an account with a dev-only default password", async () => {
  const db = await createTestDatabase({ migrate: false });
  dbs.push(db);
  const r = seed(["--migrate"], { DATABASE_URL: db.url, NODE_ENV: "production", ADMIN_EMAIL: "boss@corp.example", ADMIN_PASSWORD: "Str0ng-Prod-Pw!" });
  // today: exit 0, "demo data inserted", and both of these are true
  expect(await canLogIn(db, "admin@example.com", "admin-password")).toBe(false);
  expect(await canLogIn(db, "owner@demo-store.example", "merchant-password")).toBe(false);
  // either it refused, or the operator is the one the environment names
  if (r.code === 0) expect(await canLogIn(db, "boss@corp.example", "Str0ng-Prod-Pw!")).toBe(true);
}, 60_000);

test("in production the seed creates the operator the environment names and no demo stores", async () => {
  const db = await createTestDatabase({ migrate: false });
  dbs.push(db);
  const r = seed(["--migrate"], { DATABASE_URL: db.url, NODE_ENV: "production", ADMIN_EMAIL: "boss@corp.example", ADMIN_PASSWORD: "Str0ng-Prod-Pw!" });
  expect(r.code).toBe(0);
  expect(await canLogIn(db, "boss@corp.example", "Str0ng-Prod-Pw!")).toBe(true);
  const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM stores`;
  expect(n).toBe(0);
}, 60_000);

test("in production the seed refuses the dev-only operator password and --demo, exit 1, creating nothing", async () => {
  const db = await createTestDatabase({ migrate: false });
  dbs.push(db);
  const noPassword = seed(["--migrate"], { DATABASE_URL: db.url, NODE_ENV: "production" });
  expect(noPassword.code).toBe(1);
  expect(noPassword.err).toContain("dev-only default password");
  const demo = seed(["--demo"], { DATABASE_URL: db.url, NODE_ENV: "production", ADMIN_PASSWORD: "Str0ng-Prod-Pw!" });
  expect(demo.code).toBe(1);
  expect(demo.err).toContain("--demo");
  const [{ users, stores }] = await db.sql<{ users: number; stores: number }[]>`
    SELECT (SELECT count(*)::int FROM users) AS users, (SELECT count(*)::int FROM stores) AS stores`;
  expect({ users, stores }).toEqual({ users: 0, stores: 0 });
}, 60_000);
