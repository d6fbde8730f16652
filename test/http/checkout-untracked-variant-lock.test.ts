/**
 * A one-store checkout locks only the product rows whose stock it holds (review RC-2): the hold's lock of the leg's
 * tracked rows, by id (audit K-4), must not take the row of a product whose stock is untracked when the line names an
 * untracked variant; nothing is held for it. Before, a line naming any variant locked the product row, so a checkout
 * of an untracked variant waited behind a merchant's update of the product (here: a test transaction holding the row
 * FOR NO KEY UPDATE, the lock a product update takes).
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

// Seed: a product with untracked stock whose variant "Sand" is untracked too (stockQuantity null).
const PRODUCT = "267ffca6-627e-50a9-836d-c95deed25535";
const VARIANT = "13ec7783-6190-5688-b916-e65486f9c96b";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

test("a checkout of an untracked variant of an untracked product completes while the product row is locked by someone else", async () => {
  const [p] = await srv.db.sql<{ stock_quantity: number | null; variants: { id: string; stockQuantity?: number | null }[] }[]>`
    SELECT stock_quantity, variants FROM products WHERE id = ${PRODUCT}`;
  expect(p!.stock_quantity).toBeNull();
  expect(p!.variants.find((v) => v.id === VARIANT)?.stockQuantity ?? null).toBeNull();
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: PRODUCT, variant_id: VARIANT, quantity: 1 }] } });
  expect(c.status).toBe(201);

  const lock = await srv.db.sql.reserve();
  let answer: { status: number; body: any } | "waited";
  try {
    await lock`BEGIN`;
    await lock`SELECT id FROM products WHERE id = ${PRODUCT} FOR NO KEY UPDATE`;
    const checkout = srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId: c.body.data.id, payment_method: "MOCK", idempotency_key: crypto.randomUUID() },
    });
    answer = await Promise.race([checkout, Bun.sleep(5_000).then(() => "waited" as const)]);
    await lock`COMMIT`;
    if (answer === "waited") await checkout;
  } finally {
    lock.release();
  }
  expect(answer).not.toBe("waited");
  if (answer === "waited") return;
  expect(answer.status).toBe(200);
  expect(answer.body.data.status).toBe("COMPLETED");
  const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE cart_id = ${c.body.data.id}`;
  expect(o!.status).toBe("paid");
}, 60_000);
