/**
 * The floor of issue #6's goal on this machine: what the same journey costs when a server does nothing but the
 * journey's durable writes. Not our service: a bare `Bun.serve` with three routes and the least any design that keeps
 * "every write durable before it is acknowledged" must do, on the same Postgres, client and load as bench/checkout.ts
 * (64 agents in this process, fetch, JSON bodies, one key each):
 *
 *   POST /cart      key looked up in memory (a sha256), product price from memory, INSERT the cart, COMMIT
 *   POST /preview   cart from memory (as an actor's activation holds it), INSERT the checkout session, COMMIT
 *   POST /checkout  session from memory, one transaction: INSERT the order (unique per session: the idempotency
 *                   binding), its first history event and its outbox row, COMMIT
 *
 * i.e. three HTTP requests, three synchronous commits, five single-row inserts a journey. No validation schemas, no
 * actor messages, no risk gate, stock, coupons, state hash, reminders, rate admission or logs: everything the real
 * service does on top of this is left out, so the real service cannot be cheaper than this on this machine. If this
 * floor is far above 1,000 journeys/s the gap is our code; if it is near or below, the goal is the machine's.
 *
 * Two additions, off by default, put back one piece of the real journey each, to price it on the same footing:
 *   FLOOR_STATE=1  the cart's state as ~1.8 kB of jsonb (what the cart actor stores), inserted by the cart request and
 *                  rewritten, fenced by version, in the same transaction as each later request's write
 *   FLOOR_READS=1  each request reads its products' rows from a products table first (the catalog reads)
 *
 *   bun bench/checkout-floor.ts     # BENCH_SECONDS (default 10) after BENCH_WARMUP_SECONDS (default 10)
 *   BENCH_PG_URL=postgres://…       # default the local server; a scratch database is created and dropped
 */
import { createHash, randomUUID } from "node:crypto";
import type { JSONValue, TransactionSql } from "postgres";
import { connect, type Sql } from "../infra/db.ts";
import { cpuSplitOf, machineLine } from "./lib.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 10);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 64);
const PG = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
/** The service's own pool size (infra/db.ts openDatabase default). */
const POOL = Number(process.env.BENCH_POOL ?? 10);
const WITH_STATE = process.env.FLOOR_STATE === "1";
const WITH_READS = process.env.FLOOR_READS === "1";
/** A completed cart's state is ~1.8 kB of jsonb (docs/performance.md, checkout session 9): padding to that size. */
const STATE_PADDING = "x".repeat(1500);

const SCHEMA = `
CREATE TABLE carts (id uuid PRIMARY KEY, key_hash text NOT NULL, items jsonb NOT NULL, total_minor bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE checkout_sessions (id uuid PRIMARY KEY, cart_id uuid NOT NULL REFERENCES carts, total_minor bigint NOT NULL,
  state_hash text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE orders (id uuid PRIMARY KEY, session_id uuid NOT NULL UNIQUE REFERENCES checkout_sessions,
  idempotency_key text NOT NULL, key_hash text NOT NULL, total_minor bigint NOT NULL, status text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX orders_key ON orders (key_hash, created_at);
CREATE TABLE order_events (order_id uuid NOT NULL REFERENCES orders, seq int NOT NULL, status text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (order_id, seq));
CREATE TABLE outbox (id bigserial PRIMARY KEY, topic text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE cart_state (id uuid PRIMARY KEY, version bigint NOT NULL, state jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())
  WITH (fillfactor = 70);
CREATE TABLE products (id uuid PRIMARY KEY, store_slug text NOT NULL, price_minor bigint NOT NULL, currency text NOT NULL,
  in_stock boolean NOT NULL, policy_version int NOT NULL);
`;

interface Cart {
  keyHash: string;
  items: { product_id: string; quantity: number; price_minor: number }[];
  totalMinor: number;
}

/** A cart actor's state of about the stored size, with the fields that change per request. */
function stateOf(id: string, items: Cart["items"], status: string): JSONValue {
  return { cart: { id, status, items, currency: "USD", expiresAt: Date.now() + 86_400_000 }, session: { status, at: Date.now() }, padding: STATE_PADDING };
}

function floorServer(sql: Sql, keys: ReadonlySet<string>, prices: ReadonlyMap<string, number>) {
  const carts = new Map<string, Cart>();
  const sessions = new Map<string, { cartId: string; totalMinor: number; keyHash: string }>();
  const keyOf = (req: Request): string | null => {
    const key = req.headers.get("x-agent-api-key");
    if (!key) return null;
    const hash = createHash("sha256").update(key).digest("hex");
    return keys.has(hash) ? hash : null;
  };
  const readProducts = async (items: readonly { product_id: string }[]) => {
    const rows = await sql`SELECT id, store_slug, price_minor, currency, in_stock, policy_version FROM products WHERE id = ANY(${items.map((i) => i.product_id)}::uuid[])`;
    if (rows.length !== items.length) throw new Error("unknown product");
  };
  const writeState = async (tx: TransactionSql, id: string, version: number, state: JSONValue) => {
    const rows = await tx`UPDATE cart_state SET version = ${version + 1}, state = ${tx.json(state)}, updated_at = now() WHERE id = ${id} AND version = ${version} RETURNING id`;
    if (rows.length !== 1) throw new Error("stale version");
  };
  const refuse = (status: number, code: string) => Response.json({ success: false, error: { code, message: code } }, { status });
  return Bun.serve({
    port: 0,
    routes: {
      "/cart": {
        async POST(req) {
          const keyHash = keyOf(req);
          if (!keyHash) return refuse(401, "UNAUTHORIZED");
          const body = (await req.json()) as { items: { product_id: string; quantity: number }[] };
          const items = body.items.map((i) => ({ ...i, price_minor: prices.get(i.product_id) ?? 0 }));
          const totalMinor = items.reduce((a, i) => a + i.price_minor * i.quantity, 0);
          const id = randomUUID();
          if (WITH_READS) await readProducts(items);
          if (WITH_STATE) {
            // one statement, as the actor runtime writes a turn's rows and its state (actors/runtime/state-write.ts)
            await sql`WITH c AS (INSERT INTO carts (id, key_hash, items, total_minor) VALUES (${id}, ${keyHash}, ${sql.json(items)}, ${totalMinor}))
              INSERT INTO cart_state (id, version, state) VALUES (${id}, 1, ${sql.json(stateOf(id, items, "OPEN"))})`;
          } else await sql`INSERT INTO carts (id, key_hash, items, total_minor) VALUES (${id}, ${keyHash}, ${sql.json(items)}, ${totalMinor})`;
          carts.set(id, { keyHash, items, totalMinor });
          return Response.json({ success: true, data: { id, items, total_minor: totalMinor } });
        },
      },
      "/preview": {
        async POST(req) {
          const keyHash = keyOf(req);
          if (!keyHash) return refuse(401, "UNAUTHORIZED");
          const { cartId } = (await req.json()) as { cartId: string };
          const cart = carts.get(cartId);
          if (!cart || cart.keyHash !== keyHash) return refuse(404, "NOT_FOUND");
          const id = randomUUID();
          if (WITH_READS) await readProducts(cart.items);
          const stateHash = createHash("sha256").update(JSON.stringify(cart.items)).digest("hex");
          if (WITH_STATE) {
            const rows = await sql`WITH s AS (INSERT INTO checkout_sessions (id, cart_id, total_minor, state_hash) VALUES (${id}, ${cartId}, ${cart.totalMinor}, ${stateHash}))
              UPDATE cart_state SET version = 2, state = ${sql.json(stateOf(cartId, cart.items, "READY_FOR_PAYMENT"))}, updated_at = now()
              WHERE id = ${cartId} AND version = 1 RETURNING id`;
            if (rows.length !== 1) throw new Error("stale version");
          } else await sql`INSERT INTO checkout_sessions (id, cart_id, total_minor, state_hash) VALUES (${id}, ${cartId}, ${cart.totalMinor}, ${stateHash})`;
          sessions.set(id, { cartId, totalMinor: cart.totalMinor, keyHash });
          return Response.json({ success: true, data: { checkout_session_id: id, totals: { total_minor: cart.totalMinor }, state_hash: stateHash } });
        },
      },
      "/checkout": {
        async POST(req) {
          const keyHash = keyOf(req);
          if (!keyHash) return refuse(401, "UNAUTHORIZED");
          const body = (await req.json()) as { checkout_session_id: string; idempotency_key: string };
          const session = sessions.get(body.checkout_session_id);
          if (!session || session.keyHash !== keyHash) return refuse(404, "NOT_FOUND");
          const orderId = randomUUID();
          const cart = carts.get(session.cartId)!;
          if (WITH_READS) await readProducts(cart.items);
          await sql.begin(async (tx) => {
            if (WITH_STATE) await writeState(tx, session.cartId, 2, stateOf(session.cartId, cart.items, "COMPLETED"));
            await tx`INSERT INTO orders (id, session_id, idempotency_key, key_hash, total_minor, status)
              VALUES (${orderId}, ${body.checkout_session_id}, ${body.idempotency_key}, ${keyHash}, ${session.totalMinor}, 'paid')`;
            await tx`INSERT INTO order_events (order_id, seq, status) VALUES (${orderId}, 1, 'paid')`;
            await tx`INSERT INTO outbox (topic, payload) VALUES ('order.created', ${tx.json({ order_id: orderId, total_minor: session.totalMinor })})`;
          });
          return Response.json({ success: true, data: { status: "COMPLETED", order_id: orderId } });
        },
      },
    },
  });
}

/** The answers' data members the journey reads. */
interface Answer {
  data?: { id?: string; checkout_session_id?: string; status?: string };
}

async function post(url: string, key: string, body: unknown): Promise<{ status: number; body: Answer }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-agent-api-key": key }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Answer };
}

async function main() {
  const admin = connect(PG, 1);
  const name = `bench_floor_${Date.now().toString(36)}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const u = new URL(PG);
  u.pathname = `/${name}`;
  const sql = connect(u.toString(), POOL);
  try {
    await sql.unsafe(SCHEMA);
    const keys = Array.from({ length: AGENTS }, () => `ak_${randomUUID().replaceAll("-", "")}`);
    const keyHashes = new Set(keys.map((k) => createHash("sha256").update(k).digest("hex")));
    const prices = new Map(Array.from({ length: 20 }, (_, i) => [randomUUID(), 1000 + i * 100] as const));
    const products = [...prices.keys()];
    for (const [id, price] of prices) await sql`INSERT INTO products VALUES (${id}, 'demo-store', ${price}, 'USD', true, 1)`;
    const server = floorServer(sql, keyHashes, prices);
    const base = `http://127.0.0.1:${server.port}`;
    let measuring = false;
    let stop = false;
    let errors = 0;
    const lat: number[] = [];
    const journey = async (w: number, i: number) => {
      const key = keys[w]!;
      const t0 = performance.now();
      const c = await post(`${base}/cart`, key, { items: [{ product_id: products[(w + i) % products.length], quantity: 1 }] });
      const p = await post(`${base}/preview`, key, { cartId: c.body.data?.id });
      const d = await post(`${base}/checkout`, key, { checkout_session_id: p.body.data?.checkout_session_id, payment_method: "MOCK", idempotency_key: randomUUID() });
      if (!measuring) return;
      if (d.status === 200 && d.body.data?.status === "COMPLETED") lat.push(performance.now() - t0);
      else errors++;
    };
    const workers = Array.from({ length: AGENTS }, async (_, w) => {
      for (let i = 0; !stop; i++) await journey(w, i).catch(() => measuring && errors++);
    });
    await Bun.sleep(WARMUP_SECONDS * 1000);
    const backends = (await sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).map((r) => r.pid);
    const before = await Promise.all(backends.map((pid) => cpuSplitOf(pid)));
    const selfBefore = process.cpuUsage();
    measuring = true;
    const start = performance.now();
    await Bun.sleep(SECONDS * 1000);
    measuring = false;
    const elapsed = (performance.now() - start) / 1000;
    const self = process.cpuUsage(selfBefore);
    const after = await Promise.all(backends.map((pid) => cpuSplitOf(pid).catch(() => [0, 0] as [number, number])));
    stop = true;
    await Promise.all(workers);
    server.stop(true);
    const pgMs = after.reduce((a, [u2, s2], i) => a + Math.max(0, u2 - before[i]![0]) + Math.max(0, s2 - before[i]![1]), 0);
    lat.sort((a, b) => a - b);
    const n = Math.max(1, lat.length);
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;
    console.log(machineLine());
    console.log(`checkout floor (bare Bun.serve, 3 commits and 5 inserts a journey${WITH_STATE ? ", + cart state" : ""}${WITH_READS ? ", + catalog reads" : ""}; ${AGENTS} agents, pool ${POOL}, ${SECONDS} s after ${WARMUP_SECONDS} s warm-up)`);
    console.log(
      `  ${Math.round(lat.length / elapsed)} journeys/s, p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, ${errors} errors; ` +
        `CPU ms a journey: this process (server + client) ${((self.user + self.system) / 1000 / n).toFixed(3)}, Postgres backends ${(pgMs / n).toFixed(3)}`,
    );
  } finally {
    await sql.end({ timeout: 5 }).catch(() => {});
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

await main();
process.exit(0);
