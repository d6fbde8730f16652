/**
 * A batch sent to the store actor in parts (gateway/rest/ingest-parts.ts, used when its items pass the actor bus's
 * message budget) is answered exactly as the same batch in one message: the same counts and per-item results with
 * the whole batch's indexes, the same rows written. Compared on two stores of a real server (in-process bus, real
 * Postgres), the split one with a budget small enough for a part per few items.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { storeActor } from "../../actors/store/index.ts";
import { UPSERT_AND_REMOVE_MESSAGE } from "../../actors/store/ingest.ts";
import { ingestCatalogInParts, recordOrdersInParts } from "../../gateway/rest/ingest-parts.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
const ONE = "demo-store";
const PARTS = "greenleaf-living";

beforeAll(async () => {
  srv = await startServer({ seed: true });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const p = (externalId: string, title: string, price = 10) => ({ externalId, title, price, currency: "USD" });

/** The answer without what differs between stores (generated ids, time). */
function shape(answer: object) {
  return JSON.parse(JSON.stringify({ ...answer, syncedAt: undefined }, (k, v) => (k === "id" || k === "orderId" ? "(id)" : v)));
}

test("ingestCatalog in parts answers and writes what one message does: rejections, repeats, corrections, removals", async () => {
  const actors = srv.running.services.actors;
  const batch = (tag: string) => [
    p(`${tag}-1`, "First lamp"),
    p(`${tag}-2`, "Vase with three decimals", 5.999), // rejected (price)
    "not an object",
    p(`${tag}-2`, "Vase corrected", 5.99), // accepted: the rejected line claimed nothing
    p(`${tag}-1`, "First lamp listed again"), // repeated in this batch
    p(`${tag}-3`, "Bowl"),
    p(`${tag}-4`, "Cup also in remove"), // rejected, and its remove entry not applied: the batch says both
    ...Array.from({ length: 12 }, (_, i) => p(`${tag}-fill-${i}`, `Filler ${i}`)),
  ];
  for (const [slug, tag] of [[ONE, "EQ"], [PARTS, "EQ"]] as const) {
    const setup = await actors.ask(storeActor, slug, "ingestCatalog", { items: [p(`${tag}-old`, "Old stock"), p(`${tag}-4`, "Cup as stored")] });
    expect(setup.accepted).toBe(2);
  }
  const remove = ["EQ-old", "EQ-4", "EQ-old", "EQ-none"];
  const one = await actors.ask(storeActor, ONE, "ingestCatalog", { items: batch("EQ"), remove });
  const parts = await ingestCatalogInParts(actors, PARTS, batch("EQ"), remove, 300);
  expect(one.accepted).toBe(15);
  expect(one.removed).toBe(1);
  expect(one.rejected.find((r) => r.externalId === "EQ-4")?.errors).toEqual([{ field: "externalId", message: UPSERT_AND_REMOVE_MESSAGE }]);
  expect(shape(parts)).toEqual(shape(one));

  const rows = (slug: string) => srv.db.sql<{ external_id: string; title: string; price_minor: number; active: boolean }[]>`
    SELECT external_id, title, price_minor::int AS price_minor, active FROM products WHERE store_slug = ${slug} AND external_id LIKE 'EQ-%' ORDER BY external_id`;
  expect([...(await rows(PARTS))]).toEqual([...(await rows(ONE))]);
}, 60_000);

test("a batch with nothing valid and nothing to remove is still one sync of the store, as one message", async () => {
  const actors = srv.running.services.actors;
  const one = await actors.ask(storeActor, ONE, "ingestCatalog", { items: [p("", "no id"), 7] });
  const parts = await ingestCatalogInParts(actors, PARTS, [p("", "no id"), 7], undefined, 10);
  expect(shape(parts)).toEqual(shape(one));
  expect(typeof parts.syncedAt).toBe("string");
}, 30_000);

test("recordOrders in parts answers what one message does: a repeat in a later part is the earlier order's duplicate; a too-large invalid order is rejected alike", async () => {
  const actors = srv.running.services.actors;
  const order = (externalId: string, extra: Record<string, unknown> = {}) => ({
    externalId,
    buyer: `${externalId}@example.com`,
    status: "delivered",
    currency: "USD",
    items: [{ title: "Lamp", quantity: 1, unitPrice: 12.5 }],
    ...extra,
  });
  const batch = [
    order("EQO-1"),
    order("EQO-2", { status: "lost" }), // rejected by the schema
    order("EQO-3", { items: [{ title: "x".repeat(600), quantity: 1, unitPrice: 1 }] }), // over the part budget, and invalid (title > 500)
    order("EQO-4"),
    order("EQO-1"), // duplicate of index 0
    ...Array.from({ length: 6 }, (_, i) => order(`EQO-fill-${i}`)),
  ];
  const one = await actors.ask(storeActor, ONE, "recordOrders", { orders: batch });
  const parts = await recordOrdersInParts(actors, PARTS, batch, 400);
  expect(one.accepted).toBe(9);
  expect(one.rejected.map((r) => r.index)).toEqual([1, 2]);
  expect(shape(parts)).toEqual(shape(one));
  expect(parts.orders.find((o) => o.index === 4)).toMatchObject({ duplicate: true, orderId: parts.orders[0]!.orderId });
}, 60_000);

test("a valid item larger than a message on its own is rejected alone, claims nothing, and the rest is written", async () => {
  const actors = srv.running.services.actors;
  const big = { ...p("BIGONE-1", "Lamp with a long story"), description: "story ".repeat(80) };
  const bytes = Buffer.byteLength(JSON.stringify(big));
  const r = await ingestCatalogInParts(actors, PARTS, [big, p("BIGONE-2", "Vase"), p("BIGONE-1", "Lamp, short")], undefined, 300);
  expect(r.rejected).toEqual([{ index: 0, externalId: "BIGONE-1", errors: [{ field: "(item)", message: `is too large: ${bytes} bytes of JSON, at most 300` }] }]);
  expect(r.upserted.map((u) => [u.index, u.externalId])).toEqual([[1, "BIGONE-2"], [2, "BIGONE-1"]]);
  expect(r.accepted).toBe(2);
  const [row] = await srv.db.sql<{ title: string }[]>`SELECT title FROM products WHERE store_slug = ${PARTS} AND external_id = 'BIGONE-1'`;
  expect(row!.title).toBe("Lamp, short");

  const order = { externalId: "BIGO-1", buyer: "b@example.com", status: "delivered", currency: "USD", items: Array.from({ length: 6 }, () => ({ title: "Lamp", quantity: 1, unitPrice: 1 })) };
  const obytes = Buffer.byteLength(JSON.stringify(order));
  const o = await recordOrdersInParts(actors, PARTS, [order, { ...order, externalId: "BIGO-2", items: [order.items[0]] }], 300);
  expect(o.rejected).toEqual([{ index: 0, externalId: "BIGO-1", errors: [{ field: "(order)", message: `is too large: ${obytes} bytes of JSON, at most 300` }] }]);
  expect(o.orders.map((x) => [x.index, x.externalId, x.duplicate])).toEqual([[1, "BIGO-2", false]]);
}, 30_000);
