/**
 * A process killed between the processor's capture and the order write: on restart the checkout is recovered
 * by intent id (the sandbox processor's ledger is in Postgres, like an external processor would be), the order
 * becomes paid, and the money was captured exactly once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { call } from "../helpers/money-chaos.ts";
import { startServiceProcess } from "../helpers/service-process.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41";

let db: TestDatabase;
let dataDir: string;
let proc: ReturnType<typeof Bun.spawn> | undefined;

async function start(crash: boolean): Promise<string> {
  const started = await startServiceProcess({ databaseUrl: db.url, dataDir, env: { CHECKOUT_CRASH_AFTER_CAPTURE: crash ? "1" : "" }, timeoutMs: 60_000 });
  proc = started.proc;
  return started.url;
}

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded, as the service finds it after any restart
  dataDir = await mkdtemp(join(tmpdir(), "acs-crash-"));
});
afterAll(async () => {
  proc?.kill("SIGKILL");
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

test("a process killed right after the capture recovers on restart: the order is paid and the money was captured once", async () => {
  let url = await start(true);
  const token = (await call(url, "/api/v1/auth/login", { method: "POST", body: { email: "admin@example.com", password: "admin-password" } })).body.data.token;
  const key = await call(url, "/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: "crash", scopes: ["cart", "checkout"] } });
  const headers = { "x-agent-api-key": key.body.data.key };
  const cart = await call(url, "/api/v1/agent/cart", { method: "POST", headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const cartId = cart.body.data.id;
  const idem = crypto.randomUUID();

  // The checkout dies with the process: the capture happened, the order write did not.
  const died = await fetch(`${url}/api/v1/agent/checkout`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ cartId, payment_method: "tok_approve", idempotency_key: idem }),
  }).then(
    () => false,
    () => true,
  );
  expect(died).toBe(true);
  expect(await proc!.exited).not.toBe(0);
  const [mid] = await db.sql<{ status: string; intent_id: string }[]>`SELECT status, intent_id FROM orders WHERE cart_id = ${cartId}`;
  expect(mid.status).toBe("pending");
  const ledger = await db.sql`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${mid.intent_id}`;
  expect(ledger.map((r) => r.state)).toEqual(["captured"]);

  url = await start(false);
  const again = await call(url, "/api/v1/agent/checkout", { method: "POST", headers, body: { cartId, payment_method: "tok_approve", idempotency_key: idem } });
  expect(again.status).toBe(200);
  expect(again.body.data.status).toBe("COMPLETED");
  const orders = await db.sql`SELECT status, intent_id FROM orders WHERE cart_id = ${cartId}`;
  expect([...orders]).toEqual([{ status: "paid", intent_id: mid.intent_id }]);
  const intents = await db.sql`SELECT intent_id, state FROM sandbox_ledger_intents WHERE store_id = 'demo-store' AND intent_id = ${mid.intent_id}`;
  expect(intents).toHaveLength(1);
  const allForCart = await db.sql`SELECT count(*)::int AS n FROM sandbox_ledger_intents l JOIN orders o ON o.intent_id = l.intent_id WHERE o.cart_id = ${cartId}`;
  expect(allForCart[0].n).toBe(1);
  const [stock] = await db.sql`SELECT count(*)::int AS n FROM stock_reservations WHERE status = 'held'`;
  expect(stock.n).toBe(0);
}, 180_000);
