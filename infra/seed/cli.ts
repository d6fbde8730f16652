/**
 * `bun run seed` — the demo seed (default) or a synthetic catalog:
 *
 *   bun run seed                                   # demo data, only if the database has no stores yet
 *   bun run seed -- --products 100000 --merchants 50 [--seed 42] [--batch-size 5000]
 *   options: --database-url URL (default: $DATABASE_URL), --migrate (apply infra/migrations first),
 *            --data-dir DIR (default: $DATA_DIR or ./data)
 *
 * Which database: --database-url, else DATABASE_URL, else the embedded default's Postgres in DATA_DIR/pg (as
 * `bun run start` uses it): the running one when the service is up (its port is in postmaster.pid), or started
 * here for the seed and stopped after when it is not (initialised and migrated on a fresh DATA_DIR). So the README's
 * command works as written on the embedded default (audit U LOW-2).
 *
 * A synthetic seed also inserts the operator account when the database has none: `bun run start` seeds the demo
 * data (with the operator) only into a database without stores, so a synthetic catalog seeded first left nobody
 * able to log in (audit U LOW-2).
 *
 * The operator is --admin-email / --admin-password, else ADMIN_EMAIL / ADMIN_PASSWORD, else the dev-only defaults.
 * With NODE_ENV=production (audit M-5: the documented production seed left admin@example.com / admin-password and
 * the demo merchants' shared password in the database, while the start-up warning had gone quiet because
 * ADMIN_PASSWORD was set): an operator is never created with the dev-only default password (exit 1), and the
 * default seed creates the operator only, no demo stores (their merchant accounts share a published password);
 * `--demo` asks for them and is refused there.
 */
import postgres from "postgres";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_ADMIN_EMAIL, DEFAULT_ADMIN_PASSWORD, DEMO_SEED, seedDemo } from "./demo.ts";
import { hashPassword } from "../passwords.ts";
import { progressLine, seedSynthetic, SYNTHETIC_SEED } from "./synthetic.ts";

const USAGE = `usage: bun run seed -- [--products N --merchants M] [--seed S] [--batch-size B]
                      [--database-url URL | --data-dir DIR] [--migrate] [--admin-email E --admin-password P]
  without --products: inserts the deterministic demo data (once; a no-op when stores exist); with
                      NODE_ENV=production only the operator account (the demo stores' merchants share a
                      published password)
  with --products:    inserts a synthetic catalog of N products over M merchants (synth-0001 …), and the
                      operator account when the database has no operator
  operator:           --admin-email/--admin-password, else ADMIN_EMAIL/ADMIN_PASSWORD, else the dev-only defaults
                      (refused with NODE_ENV=production)
  database: --database-url, else DATABASE_URL, else the embedded Postgres in DATA_DIR/pg (default ./data),
            running or not`;

function fail(message: string, code = 2): never {
  process.stderr.write(`seed: ${message}\n`);
  process.exit(code);
}

function positiveInt(name: string, value: string | undefined, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) fail(`--${name} is required\n${USAGE}`);
    return fallback;
  }
  const n = Number(value.replace(/_/g, ""));
  if (!Number.isInteger(n) || n < 0) fail(`--${name} must be a non-negative integer, got "${value}"`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      products: { type: "string" },
      merchants: { type: "string" },
      seed: { type: "string" },
      "batch-size": { type: "string" },
      "database-url": { type: "string" },
      "data-dir": { type: "string" },
      migrate: { type: "boolean", default: false },
      "admin-email": { type: "string" },
      "admin-password": { type: "string" },
      demo: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let url = values["database-url"] ?? process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let serviceRunning = false;
  let migrate = values.migrate;
  if (!url) {
    const embedded = await embeddedDatabase(values["data-dir"] ?? process.env.DATA_DIR ?? "./data");
    url = embedded.url;
    stopEmbedded = embedded.stop;
    serviceRunning = embedded.running === true;
    migrate = true; // as `bun run start` does on the embedded default: a fresh DATA_DIR has no tables yet
  }

  const sql = postgres(url, { max: 4, onnotice: () => {}, connect_timeout: 10 });
  try {
    if (migrate) {
      const { applyMigrations } = await import("../db.ts");
      await applyMigrations(sql);
    }
    const [reg] = await sql<{ t: string | null }[]>`SELECT to_regclass('public.products')::text AS t`;
    if (!reg?.t) fail("the catalog tables do not exist: apply the migrations first (pass --migrate, or start the service once)");

    const production = process.env.NODE_ENV === "production";
    const adminEmail = values["admin-email"] ?? (process.env.ADMIN_EMAIL || undefined) ?? DEFAULT_ADMIN_EMAIL;
    const adminPassword = values["admin-password"] ?? (process.env.ADMIN_PASSWORD || undefined) ?? DEFAULT_ADMIN_PASSWORD;
    if (production && adminPassword === DEFAULT_ADMIN_PASSWORD && !(await hasOperator(sql))) {
      fail("NODE_ENV=production: refusing to create the operator with the dev-only default password; pass --admin-password or set ADMIN_PASSWORD", 1);
    }
    if (production && values.demo) {
      fail("NODE_ENV=production: refusing --demo (the demo stores' merchant accounts share a published password); seed demo data outside production", 1);
    }

    if (values.products === undefined && production) {
      if (await ensureOperator(sql, adminEmail, adminPassword)) process.stderr.write(`seed: created the operator ${adminEmail}; NODE_ENV=production: no demo stores\n`);
      else process.stderr.write("seed: an operator account exists; NODE_ENV=production: no demo stores, nothing inserted\n");
      return;
    }
    if (values.products === undefined) {
      const started = performance.now();
      const result = await seedDemo(sql, {
        seed: positiveInt("seed", values.seed, DEMO_SEED),
        adminEmail,
        adminPassword,
      });
      const secs = ((performance.now() - started) / 1000).toFixed(2);
      if (!result.inserted) process.stderr.write("seed: the database already has stores; demo data not inserted\n");
      else process.stderr.write(`seed: demo data inserted in ${secs}s ${JSON.stringify(result.counts)}\n`);
      return;
    }

    const products = positiveInt("products", values.products);
    const merchants = positiveInt("merchants", values.merchants, 10);
    if (merchants < 1) fail("--merchants must be at least 1");
    const tty = process.stderr.isTTY === true;
    const started = performance.now();
    let lastPrinted = -1;
    const result = await seedSynthetic(sql, {
      products,
      merchants,
      seed: positiveInt("seed", values.seed, SYNTHETIC_SEED),
      batchSize: positiveInt("batch-size", values["batch-size"], 5000) || 5000,
      onProgress: (done, total) => {
        const line = progressLine(done, total, (performance.now() - started) / 1000);
        if (tty) process.stderr.write(`\r${line}`);
        else {
          // Without a terminal, one line per 10 % keeps CI logs readable.
          const decile = Math.floor((done / Math.max(1, total)) * 10);
          if (decile !== lastPrinted) {
            lastPrinted = decile;
            process.stderr.write(`${line}\n`);
          }
        }
      },
    });
    if (tty) process.stderr.write("\n");
    process.stderr.write(
      `seed: ${result.products.toLocaleString("en-US")} products across ${result.merchants} merchants in ${result.seconds.toFixed(2)}s ` +
        `(${Math.round(result.productsPerSecond).toLocaleString("en-US")} products/s)\n`,
    );
    // like the demo seed: the flags, else the environment, else the dev-only defaults (docs/operations.md)
    if (await ensureOperator(sql, adminEmail, adminPassword)) process.stderr.write(`seed: no operator account existed; created ${adminEmail}\n`);
    if (serviceRunning) {
      // no catalog.changed event is sent, but the insert trigger stamps change_xid (migration 0076), which the
      // running service's search catch-up follows (docs/search.md "Catch-up")
      process.stderr.write("seed: the running service searches these within 30 s (its search catch-up), or at once after POST /api/v1/admin/search/reindex (operator)\n");
    }
  } finally {
    await sql.end({ timeout: 5 });
    if (stopEmbedded) await stopEmbedded();
  }
}

/**
 * The embedded default's database in `dataDir`: the running postmaster's (line 4 of postmaster.pid is its port),
 * or one started here and stopped by the caller.
 */
async function embeddedDatabase(dataDir: string): Promise<{ url: string; stop?: () => Promise<void>; running?: boolean }> {
  const { embeddedPostgresUrl, startEmbeddedPostgres } = await import("../db.ts");
  const pgDir = resolve(join(dataDir, "pg"));
  const pidFile = join(pgDir, "postmaster.pid");
  if (existsSync(pidFile)) {
    const [pid, , , port] = readFileSync(pidFile, "utf8").split("\n");
    if (Number(pid) > 0 && Number(port) > 0 && processAlive(Number(pid))) {
      process.stderr.write(`seed: using the running embedded Postgres in ${pgDir} (port ${Number(port)})\n`);
      return { url: embeddedPostgresUrl(Number(port)), running: true };
    }
  }
  process.stderr.write(`seed: starting the embedded Postgres in ${pgDir} for the seed (no DATABASE_URL)\n`);
  const started = await startEmbeddedPostgres(pgDir);
  return { url: started.url, stop: started.stop };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"; // alive, owned by another user (initdb's postgres user)
  }
}

async function hasOperator(sql: postgres.Sql<{}>): Promise<boolean> {
  const [has] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM users WHERE role = 'operator'`;
  return (has?.n ?? 0) > 0;
}

/** Inserts the operator when there is none; true when it did. An existing account with that email is left alone. */
async function ensureOperator(sql: postgres.Sql<{}>, email: string, password: string): Promise<boolean> {
  if (await hasOperator(sql)) return false;
  const hash = await hashPassword(password);
  const rows = await sql`INSERT INTO users (email, password_hash, role) VALUES (${email}, ${hash}, 'operator') ON CONFLICT (email) DO NOTHING RETURNING id`;
  return rows.length > 0;
}

main().catch((err: unknown) => {
  process.stderr.write(`seed: failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
