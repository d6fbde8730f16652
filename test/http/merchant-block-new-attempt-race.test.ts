/**
 * A merchant's block racing a new payment attempt of the key (review G, session 14): the attempt reads the block in
 * its hold guard (a snapshot early in the cart's turn), so a block committing between that read and the hold's commit
 * was paid. The hold now takes the key's allowlist binding row, which the block writes, and reads the block under
 * that lock (actors/store/commerce.ts bindingOf): a block committed before the hold is refused like a block the guard
 * saw (403 NOT_ELIGIBLE agent_blocked_by_merchant, nothing held, nothing captured), and a block arriving while the
 * attempt holds the row waits for the attempt to commit.
 *
 * Staged with a test transaction holding a row the attempt needs: a tracked product's row (the hold locks it before
 * the binding), so the attempt stops after its guard read and before its hold, or, for a two-store checkout, after
 * the first store's hold (binding taken) and before the second's.
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, placeOrder, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store DS-0005, tracked stock
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living, tracked stock

// The attempt waits on the test's lock while the block runs: a loaded machine must not turn that into a 503.
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, ACTOR_ASK_TIMEOUT_MS: 60_000 } });

type Answer = { status: number; body: any };
type Reserved = Awaited<ReturnType<(typeof srv)["db"]["sql"]["reserve"]>>;

/** Merchant sessions by store, logged in once (a log-in is an argon2id check: not inside a race). */
const tokens = new Map<string, Promise<string>>();
const merchantToken = (slug: string): Promise<string> => {
  if (!tokens.has(slug)) tokens.set(slug, slug === "demo-store" ? login(srv) : login(srv, merchantLogin(slug)));
  return tokens.get(slug)!;
};
const setStatus = async (slug: string, key: TestKey, status: "allowed" | "blocked"): Promise<Answer> => {
  const token = await merchantToken(slug);
  return srv.json(`/api/v1/merchant/stores/${slug}/allowlist/${key.id}`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { status } });
};

async function cartOf(key: TestKey, productIds: string[]): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: productIds.map((product_id) => ({ product_id, quantity: 1 })) } });
  expect(r.status).toBe(201);
  return r.body.data.id as string;
}

/** Polls until a statement matching `like` waits for a lock, or `settled` reports the request ended (then false). */
async function waitsOnLock(like: string, settled: () => boolean): Promise<boolean> {
  for (let i = 0; i < 1_500; i++) {
    const [w] = await srv.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND datname = current_database() AND query ILIKE ${like}`;
    if (w!.n > 0) return true;
    if (settled()) return false;
    await Bun.sleep(10);
  }
  return false;
}

/**
 * Starts `call` with `productId`'s row locked by `lock`, and returns once the attempt's hold waits on that row, with
 * the call still running (`paying`: wrapped, so awaiting this does not wait for it).
 */
async function attemptStoppedAtHold(lock: Reserved, productId: string, call: () => Promise<Answer>): Promise<{ paying: Promise<Answer> }> {
  await lock`BEGIN`;
  await lock`SELECT id FROM products WHERE id = ${productId} FOR UPDATE`;
  let done = false;
  const paying = call().finally(() => (done = true));
  // The hold statement (its text as pg_stat_activity keeps it: the first 1 kB) waits for the row.
  expect(await waitsOnLock("WITH want AS MATERIALIZED%", () => done)).toBe(true);
  return { paying };
}

const ordersOf = (cartId: string) =>
  srv.db.sql<{ store_slug: string; status: string; capture_ref: string | null }[]>`
    SELECT store_slug, status, capture_ref FROM orders WHERE cart_id = ${cartId} ORDER BY store_slug`;
/** Payment intents the sandbox processor was asked for at a store (this file's tests run one after another). */
const intentsAt = async (slug: string) =>
  (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE store_id = ${slug}`)[0]!.n;
const heldOf = async (productId: string) =>
  (await srv.db.sql<{ n: number }[]>`SELECT reserved_quantity::int AS n FROM products WHERE id = ${productId}`)[0]!.n;

for (const history of ["a key that never ordered at the store (the block creates its binding)", "a key that ordered there before"]) {
  test(`a block committed between a new attempt's guard read and its hold is refused 403, nothing held or captured: ${history}`, async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    if (history.startsWith("a key that ordered")) await placeOrder(srv, key, GREEN, "tok_approve");
    const cartId = await cartOf(key, [GREEN]);
    const heldBefore = await heldOf(GREEN);
    const intentsBefore = await intentsAt("greenleaf-living");
    await merchantToken("greenleaf-living");
    const idem = crypto.randomUUID();
    const pay = () => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "tok_approve", idempotency_key: idem } });

    const lock = await srv.db.sql.reserve();
    try {
      // The attempt has read the block (none yet) with its risk inputs and waits for the product row in its hold.
      const { paying } = await attemptStoppedAtHold(lock, GREEN, pay);
      const block = await setStatus("greenleaf-living", key, "blocked");
      expect(block.status).toBe(200);
      await lock`ROLLBACK`;

      const r = await paying;
      expect(r.status).toBe(403);
      expect(r.body.code).toBe("NOT_ELIGIBLE");
      expect(r.body.details).toMatchObject({ reason: "agent_blocked_by_merchant", merchant_slugs: ["greenleaf-living"] });
    } finally {
      lock.release();
    }
    // The attempt rolled back whole: no order, nothing held, nothing at the processor.
    expect([...(await ordersOf(cartId))]).toEqual([]);
    expect(await heldOf(GREEN)).toBe(heldBefore);
    expect(await intentsAt("greenleaf-living")).toBe(intentsBefore);

    // The session is READY_FOR_PAYMENT as after a guard refusal: allowing the key again lets it pay.
    expect((await setStatus("greenleaf-living", key, "allowed")).status).toBe(200);
    const again = await pay();
    expect(again.status).toBe(200);
    expect((await ordersOf(cartId)).map((o) => o.status)).toEqual(["paid"]);
  }, 60_000);
}

test("a block arriving while an attempt holds the key's binding waits for the attempt's hold to commit, then sees and cancels its order", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  await placeOrder(srv, key, SKILLET); // the key's binding at demo-store exists
  const cartId = await cartOf(key, [SKILLET, GREEN]);
  // demo-store's leg waits for the buyer (its order stays pending after the attempt), greenleaf's is captured.
  const pay = () =>
    srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId, idempotency_key: crypto.randomUUID(), payment_methods: { "demo-store": "tok_needs_approval", "greenleaf-living": "tok_approve" } },
    });
  await merchantToken("demo-store");

  const lock = await srv.db.sql.reserve();
  let block: Answer;
  let r: Answer;
  try {
    // Legs in slug order in one transaction: demo-store's hold (binding taken) is written, greenleaf's waits.
    const { paying } = await attemptStoppedAtHold(lock, GREEN, pay);
    let blockDone = false;
    const blocking = setStatus("demo-store", key, "blocked").finally(() => (blockDone = true));
    // The block's upsert waits for the attempt's transaction. Before, it committed at once and its cancel read the
    // key's pending orders before the attempt's order was committed: that order survived the block.
    expect(await waitsOnLock("%INSERT INTO store_agent_allowlist (store_slug, agent_key_id, status)%", () => blockDone)).toBe(true);
    await lock`ROLLBACK`;
    [r, block] = await Promise.all([paying, blocking]);
  } finally {
    lock.release();
  }
  // The attempt held first and went on: greenleaf captured, demo-store waiting for the buyer. The block, ordered after
  // it, then found demo-store's order pending and canceled it through its session: nothing captured there.
  expect(r.status).toBe(202);
  expect(r.body.details.completed_store_ids).toEqual(["greenleaf-living"]);
  expect(block.status).toBe(200);
  expect((await ordersOf(cartId)).map((o) => [o.store_slug, o.status, o.capture_ref === null])).toEqual([
    ["demo-store", "canceled", true],
    ["greenleaf-living", "paid", false],
  ]);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE store_id = 'demo-store' AND state = 'captured'
    AND intent_id IN (SELECT intent_id FROM orders WHERE cart_id = ${cartId})`;
  expect(n).toBe(0);
  // And it stands for the key's next attempt there.
  const next = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: await cartOf(key, [SKILLET]), payment_method: "tok_approve" } });
  expect(next.status).toBe(403);
  expect(next.body.details).toMatchObject({ reason: "agent_blocked_by_merchant", merchant_slugs: ["demo-store"] });
}, 60_000);
