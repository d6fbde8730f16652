/**
 * Trust recompute benchmark: 10,000 stores scored from their data by the real trust actor (in-process bus, real
 * Postgres), i.e. the work of one 6-hour refresh: per batch of 500 stores the aggregate queries over products and
 * orders, both engines, two Ed25519 signatures per store, history/current/stores writes and one commit.
 *
 * Data: BENCH_STORES stores (default 10,000), 10 products and 30 orders each (100k products, 300k orders over 180
 * days, both channels, some canceled/late/disputed/refunded), generated server-side with generate_series.
 *
 * Run: `bun bench/trust.ts` (about a minute on 2 shared cores, most of it generating data). Goal: a full recompute
 * of 10,000 stores in ≤ 10 s. Figures are recorded in docs/performance.md ("Trust (bench/trust.ts)").
 */
import { ActorClient } from "../actors/runtime/client.ts";
import { ActorHost } from "../actors/runtime/host.ts";
import { InProcessTransport } from "../actors/transport/in-process.ts";
import { configureTrust, trustActor, TRUST_ACTOR_ID } from "../actors/trust/index.ts";
import { createTestDatabase } from "../test/helpers/db.ts";

const STORES = Number(process.env.BENCH_STORES ?? 10_000);
const GOAL_SECONDS = 10;

const db = await createTestDatabase({ poolSize: 10 });
const sql = db.sql;
const t0 = performance.now();
await sql`
  INSERT INTO stores (slug, name, verification_level, country, last_sync_at, policies, review_rating_avg, review_count, created_at)
  SELECT 'bench-' || lpad(i::text, 5, '0'), 'Bench Store ' || i,
         (ARRAY['BASIC', 'STANDARD', 'PREMIUM', 'QUALIFIED', 'UNVERIFIED'])[1 + i % 5], 'US',
         now() - (i % 200) * interval '1 hour',
         CASE WHEN i % 3 = 0 THEN '{"acceptsReturns": false}'::jsonb
              ELSE '{"acceptsReturns": true, "returnWindowDays": 30, "shippingEstimateDays": "3-5", "supportResponseTimeSla": "24h"}'::jsonb END,
         round((2 + (i % 30) / 10.0)::numeric, 2), i % 500, now() - (i % 1000) * interval '1 day'
  FROM generate_series(1, ${STORES}) AS i`;
await sql`
  INSERT INTO products (store_slug, external_id, title, price_minor, currency, gtin, images, stock_quantity, in_stock)
  SELECT s.slug, 'P-' || j, 'Bench product ' || j, 1000 + j * 37, 'USD',
         CASE WHEN j % 7 = 0 THEN NULL ELSE lpad((s.n * 100 + j)::text, 13, '0') END,
         CASE WHEN j % 9 = 0 THEN '{}'::text[] ELSE ARRAY['https://img.example/p.jpg'] END,
         j % 5, (j % 5 > 0) <> (j % 13 = 0)
  FROM (SELECT slug, row_number() OVER (ORDER BY slug) AS n FROM stores) s, generate_series(1, 10) AS j`;
await sql`
  INSERT INTO orders (store_slug, channel, buyer_ref, status, total_minor, currency, payment_rail, fulfilled_on_time, disputed, refunded_minor, created_at)
  SELECT s.slug, CASE WHEN (k + s.n) % 4 = 0 THEN 'agent' ELSE 'human' END, md5(s.slug || (k % 17)),
         CASE WHEN (k + s.n) % 23 = 0 THEN 'canceled' ELSE 'delivered' END, 5000 + k * 13, 'USD', 'card',
         CASE WHEN (k + s.n) % 23 = 0 THEN NULL ELSE (k + s.n) % 11 <> 0 END,
         (k * s.n) % 41 = 0, CASE WHEN (k + s.n) % 19 = 0 THEN 1000 ELSE 0 END,
         now() - ((k * 6 + s.n) % 180) * interval '1 day'
  FROM (SELECT slug, row_number() OVER (ORDER BY slug) AS n FROM stores) s, generate_series(1, 30) AS k`;
await sql`ANALYZE`;
const [counts] = await sql`SELECT (SELECT count(*) FROM stores) AS stores, (SELECT count(*) FROM products) AS products, (SELECT count(*) FROM orders) AS orders`;
console.log(`data: ${counts.stores} stores, ${counts.products} products, ${counts.orders} orders in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const transport = new InProcessTransport();
const client = new ActorClient(transport);
const host = new ActorHost({ transport, sql, definitions: [trustActor], caller: client, reminderPollMs: 0 });
await host.start();
configureTrust(sql, {
  kek: crypto.getRandomValues(new Uint8Array(32)),
  flags: () => ({ TRUST_SCORE_PUBLIC_V41_ENABLED: true, TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED: true }),
  intervalMs: 6 * 3_600_000,
});
await client.ask(trustActor, TRUST_ACTOR_ID, "ensureScheduled", {});

const results: { run: string; stores: number; seconds: number; alerts: number }[] = [];
for (const run of ["first (empty history)", "second (anomaly check over 24 h history)"]) {
  const started = performance.now();
  const r = await client.ask(trustActor, TRUST_ACTOR_ID, "recomputeAll", { trigger: "operator" }, { timeoutMs: 600_000 });
  const seconds = (performance.now() - started) / 1000;
  results.push({ run, stores: r.stores, seconds, alerts: r.alerts });
  console.log(`${run}: ${r.stores} stores in ${seconds.toFixed(2)} s (${Math.round(r.stores / seconds)} stores/s, ${r.batches} batches, ${r.alerts} alerts); phases ms ${JSON.stringify(r.profileMs)}`);
}
const [h] = await sql`SELECT count(*) AS n FROM trust_score_history`;
const statuses = await sql`SELECT operational_status, count(*) AS n FROM stores GROUP BY 1 ORDER BY 1`;
console.log(`history rows: ${h.n}; statuses: ${statuses.map((s) => `${s.operational_status} ${s.n}`).join(", ")}`);
const worst = Math.max(...results.map((r) => r.seconds));
console.log(`goal ≤ ${GOAL_SECONDS} s for ${STORES} stores: ${worst <= GOAL_SECONDS ? "met" : "NOT met"} (slowest run ${worst.toFixed(2)} s)`);

await host.stop();
await transport.close();
await db.drop();
process.exit(0);
