/**
 * Helper B's LOW (session 22): an ingestion item missing a required field got two errors on that field, TypeBox's
 * "Expected required property" and "Expected number" (or "Expected union value"), and a value of the wrong type got
 * TypeBox's words too ("Expected union value" for a stock of "five"), where every route's 400 says the rule
 * ("must be … (missing)", "must be … (got …)": infra/validation-message.ts). Each field of an item now has
 * one error, in the house words, on PUT /catalog, PATCH /inventory and POST /orders alike (actors/store/ingest.ts
 * `schemaErrors`).
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: Record<string, string>;

beforeAll(async () => {
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);

const call = (method: string, what: string, body: unknown) => srv.json(`/api/v1/merchant/stores/${SLUG}/${what}`, { method, headers: owner, body });
const STOCK = "an integer from 0 to 2147483647 or null";

test("PUT /catalog: a missing price is one error, 'must be a number ≥ 0 (missing)'; a price of the wrong type says what it got", async () => {
  const r = await call("PUT", "catalog", {
    products: [
      { externalId: "ONE-ERR-1", title: "Oak tray", currency: "USD" },
      { externalId: "ONE-ERR-2", title: "Oak tray", currency: "USD", price: "12", stockQuantity: -1 },
      { externalId: "ONE-ERR-3", currency: "USD", price: 12, variants: [{ title: "S", stockQuantity: 1.5 }] },
    ],
  });
  expect(r.status).toBe(200);
  expect(r.body.data.accepted).toBe(0);
  expect(r.body.data.rejected).toEqual([
    { index: 0, externalId: "ONE-ERR-1", errors: [{ field: "price", message: "must be a number ≥ 0 (missing)" }] },
    {
      index: 1,
      externalId: "ONE-ERR-2",
      errors: [
        { field: "price", message: 'must be a number ≥ 0 (got "12")' },
        { field: "stockQuantity", message: `must be ${STOCK} (got -1)` },
      ],
    },
    {
      index: 2,
      externalId: "ONE-ERR-3",
      errors: [
        { field: "title", message: "must be a string of 1 to 500 characters (missing)" },
        { field: "variants.0.stockQuantity", message: `must be ${STOCK} (got 1.5)` },
      ],
    },
  ]);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'ONE-ERR-%'`;
  expect(n).toBe(0);
}, 30_000);

test("PATCH /inventory: a missing stockQuantity is one error, and a stock of 'five' says the rule, not 'Expected union value'", async () => {
  const r = await call("PATCH", "inventory", { items: [{ externalId: "ONE-ERR-INV" }, { externalId: "ONE-ERR-INV", stockQuantity: "five" }] });
  expect(r.status).toBe(200);
  expect(r.body.data.rejected).toEqual([
    { index: 0, externalId: "ONE-ERR-INV", errors: [{ field: "stockQuantity", message: `must be ${STOCK} (missing)` }] },
    { index: 1, externalId: "ONE-ERR-INV", errors: [{ field: "stockQuantity", message: `must be ${STOCK} (got "five")` }] },
  ]);
}, 30_000);

test("POST /orders: a missing status is one error naming the statuses; an unknown key says which keys an order has", async () => {
  const items = [{ title: "Oak tray", quantity: 1, unitPrice: 12 }];
  const r = await call("POST", "orders", {
    orders: [
      { externalId: "ONE-ERR-ORD-1", buyer: "ada@example.com", currency: "USD", items },
      { externalId: "ONE-ERR-ORD-2", buyer: "ada@example.com", status: "paid", currency: "USD", items, note: "gift" },
    ],
  });
  expect(r.status).toBe(201);
  expect(r.body.data.rejected).toEqual([
    {
      index: 0,
      externalId: "ONE-ERR-ORD-1",
      errors: [{ field: "status", message: "must be one of 'pending', 'paid', 'fulfilled', 'shipped', 'delivered', 'canceled', 'refunded' (missing)" }],
    },
    {
      index: 1,
      externalId: "ONE-ERR-ORD-2",
      errors: [
        {
          field: "note",
          message: "Property 'note' should not be provided; allowed: externalId, buyer, status, currency, items, total, createdAt, fulfilledOnTime, disputed, refunded",
        },
      ],
    },
  ]);
}, 30_000);
