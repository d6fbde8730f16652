/**
 * `bun run seed` — the demo seed (default) or a synthetic catalog:
 *
 *   bun run seed                                   # demo data, only if the database has no stores yet
 *   bun run seed -- --products 100000 --merchants 50 [--seed 42] [--batch-size 5000]
 *   options: --database-url URL (default: $DATABASE_URL), --migrate (apply infra/migrations first)
 *
 * The database is never guessed: without --database-url or DATABASE_URL the command refuses.
 */
import postgres from "postgres";
import { parseArgs } from "node:util";
import { DEMO_SEED, seedDemo } from "./demo.ts";
import { progressLine, seedSynthetic, SYNTHETIC_SEED } from "./synthetic.ts";

const USAGE = `usage: bun run seed -- [--products N --merchants M] [--seed S] [--batch-size B]
                      [--database-url URL] [--migrate] [--admin-email E --admin-password P]
  without --products: inserts the deterministic demo data (once; a no-op when stores exist)
  with --products:    inserts a synthetic catalog of N products over M merchants (synth-0001 …)`;

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
      migrate: { type: "boolean", default: false },
      "admin-email": { type: "string" },
      "admin-password": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const url = values["database-url"] ?? process.env.DATABASE_URL;
  if (!url) fail("no database: set DATABASE_URL or pass --database-url postgres://user@host:port/db");

  const sql = postgres(url, { max: 4, onnotice: () => {}, connect_timeout: 10 });
  try {
    if (values.migrate) {
      const { applyMigrations } = await import("../db.ts");
      await applyMigrations(sql);
    }
    const [reg] = await sql<{ t: string | null }[]>`SELECT to_regclass('public.products')::text AS t`;
    if (!reg?.t) fail("the catalog tables do not exist: apply the migrations first (pass --migrate, or start the service once)");

    if (values.products === undefined) {
      const started = performance.now();
      const result = await seedDemo(sql, {
        seed: positiveInt("seed", values.seed, DEMO_SEED),
        adminEmail: values["admin-email"],
        adminPassword: values["admin-password"],
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
  } finally {
    await sql.end({ timeout: 5 });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`seed: failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
