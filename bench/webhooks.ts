/**
 * Webhook deliveries per second to a local receiver, end to end: events committed to the outbox, fanned out,
 * claimed by the endpoint's `webhook` actor, signed and POSTed, outcomes recorded in Postgres. Baseline in the
 * same run: bare signed POSTs from a loop with the same concurrency (32 in flight) to the same receiver.
 *
 * Run: `bun bench/webhooks.ts` (or `bun run bench webhooks`); `BENCH_EVENTS=5000` to change the size.
 * Figures go to docs/performance.md, section "Webhooks (bench/webhooks.ts)".
 */
import { deliveryHeaders } from "../actors/webhook/deliver.ts";
import { DELIVERY_CONCURRENCY } from "../actors/webhook/index.ts";
import { generateWebhookSecret } from "../actors/webhook/signature.ts";
import { boot } from "../gateway/boot.ts";
import { createTestDatabase } from "../test/helpers/db.ts";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 3000);

let received = 0;
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    await req.arrayBuffer();
    received++;
    return new Response(null, { status: 204 });
  },
});
const hookUrl = `http://127.0.0.1:${receiver.port}/hooks`;

async function baseline(n: number): Promise<number> {
  const secret = generateWebhookSecret();
  const body = JSON.stringify({ event: "order.created", timestamp: new Date().toISOString(), orderId: crypto.randomUUID(), merchantSlug: "demo-store", totalAmount: 26.95, currency: "USD", status: "pending" });
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: DELIVERY_CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        const headers = deliveryHeaders({ eventId: crypto.randomUUID(), eventKind: "order.created", body, attempt: 1, secrets: [secret], timestampSec: Math.floor(Date.now() / 1000) });
        const res = await fetch(hookUrl, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(10_000) });
        await res.body?.cancel();
      }
    }),
  );
  return n / ((performance.now() - start) / 1000);
}

const db = await createTestDatabase({ migrate: false });
const dataDir = await mkdtemp(join(tmpdir(), "acs-bench-webhooks-"));
const running = await boot({
  role: "start",
  env: {},
  config: { DATABASE_URL: db.url, HOST: "127.0.0.1", PORT: 0, DATA_DIR: dataDir, SEED_DEMO: true, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false },
});
try {
  const loginRes = await fetch(`${running.url}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "admin@example.com", password: "admin-password" }),
  });
  const token = ((await loginRes.json()) as { data: { token: string } }).data.token;
  const reg = await fetch(`${running.url}/api/v1/merchant/stores/demo-store/webhooks`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ url: hookUrl, events: ["order.created"] }),
  });
  if (reg.status !== 201) throw new Error(`registration failed: ${reg.status} ${await reg.text()}`);

  await baseline(500); // warm-up
  const base = await baseline(EVENTS);
  received = 0;

  // One commit of EVENTS outbox rows (what EVENTS order changes would have written), then wait for all.
  await db.sql`
    INSERT INTO webhook_events (store_slug, kind, payload)
    SELECT 'demo-store', 'order.created', jsonb_build_object('event', 'order.created', 'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'orderId', gen_random_uuid(), 'merchantSlug', 'demo-store', 'totalAmount', 26.95, 'currency', 'USD', 'status', 'pending')
    FROM generate_series(1, ${EVENTS})`;
  const start = performance.now();
  while (received < EVENTS) {
    if (performance.now() - start > 300_000) throw new Error(`only ${received}/${EVENTS} delivered after 300 s`);
    await Bun.sleep(10);
  }
  const deliveredAt = performance.now();
  // recorded as delivered in Postgres too
  for (;;) {
    const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'delivered'`;
    if (n >= EVENTS) break;
    await Bun.sleep(20);
  }
  const recordedAt = performance.now();
  const sent = EVENTS / ((deliveredAt - start) / 1000);
  const recorded = EVENTS / ((recordedAt - start) / 1000);
  console.log(`events: ${EVENTS}, ${DELIVERY_CONCURRENCY} in flight per endpoint, one endpoint`);
  console.log(`baseline (bare signed POST loop):        ${base.toFixed(0)} deliveries/s`);
  console.log(`service, received by the receiver:       ${sent.toFixed(0)} deliveries/s (${((sent / base) * 100).toFixed(0)} % of baseline)`);
  console.log(`service, recorded delivered in Postgres: ${recorded.toFixed(0)} deliveries/s`);
  console.log(`first-to-last latency: ${((deliveredAt - start) / 1000).toFixed(2)} s`);
} finally {
  await running.stop();
  receiver.stop(true);
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
}
process.exit(0);
