/**
 * Full checkout journeys (create cart → preview → complete with MOCK on the demo store), 64 agents in flight,
 * each with its own key, against the real service: the embedded default (embedded Postgres) and an external
 * Postgres (BENCH_PG_URL, default the local server at 127.0.0.1:5432, a fresh database). Every write is durable
 * (synchronous commit). The client runs in the same process (fetch), so its cost is part of the figure.
 *
 *   bun bench/checkout.ts          # BENCH_SECONDS (default 10) measured per target after a 2 s warm-up
 */
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boot, type Running } from "../gateway/boot.ts";
import { connect } from "../infra/db.ts";
import { setLogLevel } from "../infra/log.ts";
import { machineLine } from "./lib.ts";

setLogLevel("error");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 64);
const PG = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

interface Result {
  target: string;
  journeys: number;
  perSec: number;
  p50: number;
  p99: number;
  errors: number;
}

async function json(url: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url + path, {
    method: init.method ?? "GET",
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function run(target: string, running: Running): Promise<Result> {
  const url = running.url;
  const token = (await json(url, "/api/v1/auth/login", { method: "POST", body: { email: "admin@example.com", password: "admin-password" } })).body.data.token;
  const keys: string[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const r = await json(url, "/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: `bench-${i}`, scopes: ["cart", "checkout"] } });
    keys.push(r.body.data.key);
  }
  // Untracked-stock demo-store products, so the bench measures checkout, not a sell-out.
  const products = (await running.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
    AND stock_quantity IS NULL AND jsonb_array_length(variants) = 0 ORDER BY id LIMIT 20`).map((r) => r.id);
  let measuring = false;
  let stop = false;
  const lat: number[] = [];
  let errors = 0;
  const journey = async (w: number, i: number) => {
    const headers = { "x-agent-api-key": keys[w] };
    const t0 = performance.now();
    const c = await json(url, "/api/v1/agent/cart", { method: "POST", headers, body: { items: [{ product_id: products[(w + i) % products.length], quantity: 1 }] } });
    const p = await json(url, "/api/v1/agent/checkout/preview", { method: "POST", headers, body: { cartId: c.body.data?.id } });
    const d = await json(url, "/api/v1/agent/checkout", {
      method: "POST",
      headers,
      body: { cartId: c.body.data?.id, checkout_session_id: p.body.data?.checkout_session_id, payment_method: "MOCK", idempotency_key: crypto.randomUUID() },
    });
    if (!measuring) return;
    if (d.status === 200 && d.body.data.status === "COMPLETED") lat.push(performance.now() - t0);
    else errors++;
  };
  const workers = Array.from({ length: AGENTS }, async (_, w) => {
    for (let i = 0; !stop; i++) await journey(w, i).catch(() => measuring && errors++);
  });
  await Bun.sleep(2000);
  measuring = true;
  const start = performance.now();
  await Bun.sleep(SECONDS * 1000);
  measuring = false;
  const elapsed = (performance.now() - start) / 1000;
  stop = true;
  await Promise.all(workers);
  lat.sort((a, b) => a - b);
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;
  return { target, journeys: lat.length, perSec: lat.length / elapsed, p50: pct(50), p99: pct(99), errors };
}

const results: Result[] = [];
const ONLY_EXTERNAL = process.env.BENCH_ONLY_EXTERNAL === "1";
if (!ONLY_EXTERNAL) {
  const dir = await mkdtemp(join(tmpdir(), "acs-bench-checkout-"));
  await chmod(dir, 0o755); // embedded Postgres may run initdb as another user
  const running = await boot({ role: "start", env: {}, config: { DATA_DIR: dir, DATABASE_URL: "", HOST: "127.0.0.1", PORT: 0, RATE_LIMITS_ENABLED: false, LOG_LEVEL: "error" } });
  try {
    results.push(await run("embedded default (embedded Postgres)", running));
  } finally {
    await running.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
{
  const admin = connect(PG, 1);
  const name = `bench_checkout_${Date.now().toString(36)}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const u = new URL(PG);
  u.pathname = `/${name}`;
  const dir = await mkdtemp(join(tmpdir(), "acs-bench-checkout-"));
  const running = await boot({ role: "start", env: {}, config: { DATA_DIR: dir, DATABASE_URL: u.toString(), HOST: "127.0.0.1", PORT: 0, RATE_LIMITS_ENABLED: false, LOG_LEVEL: "error" } });
  try {
    results.push(await run("external Postgres (DATABASE_URL)", running));
  } finally {
    await running.stop();
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    await rm(dir, { recursive: true, force: true });
  }
}

console.log(`### Checkout journeys (${AGENTS} agents, ${SECONDS} s each; ${machineLine()})\n`);
console.log("| target | completed journeys/s | p50 ms | p99 ms | journeys | errors |");
console.log("|---|---|---|---|---|---|");
for (const r of results) console.log(`| ${r.target} | ${r.perSec.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.journeys} | ${r.errors} |`);
process.exit(0);
