import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { productFromRow, storeFromRow, type ProductRow, type StoreRow } from "../../actors/store/schemas.ts";
import { buildDemoData, DEMO_SEED, DEMO_STORE_SLUG, demoProductId, seedDemo } from "../../infra/seed/demo.ts";
import { createScratchDatabase, type ScratchDatabase } from "../../infra/seed/scratch-db.ts";

let db: ScratchDatabase;
const expected = buildDemoData(DEMO_SEED, { now: new Date() });

beforeAll(async () => {
  db = await createScratchDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const count = async (table: string): Promise<number> => {
  const [row] = await db.sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table}`);
  return row!.n;
};

describe("seeding the demo data into Postgres", () => {
  test("two concurrent seedDemo calls insert the data exactly once", async () => {
    const results = await Promise.all([seedDemo(db.sql), seedDemo(db.sql)]);
    expect(results.map((r) => r.inserted).sort()).toEqual([false, true]);
    const winner = results.find((r) => r.inserted)!;
    expect(winner.counts.products).toBe(expected.products.length);
    expect(await count("stores")).toBe(expected.stores.length);
    expect(await count("products")).toBe(expected.products.length);
    expect(await count("orders")).toBe(expected.orders.length);
    expect(await count("order_items")).toBe(expected.orderItems.length);
    expect(await count("order_events")).toBe(expected.orderEvents.length);
    expect(await count("product_price_history")).toBe(expected.priceHistory.length);
    expect(await count("users")).toBe(expected.users.length);
  });

  test("seeding again inserts nothing", async () => {
    const before = await count("products");
    const again = await seedDemo(db.sql);
    expect(again.inserted).toBe(false);
    expect(await count("products")).toBe(before);
    expect(await count("users")).toBe(expected.users.length);
  });

  test("product ids in the database are the stable seeded ones", async () => {
    const [row] = await db.sql<ProductRow[]>`SELECT * FROM products WHERE store_slug = ${DEMO_STORE_SLUG} AND external_id = 'DS-0001'`;
    expect(row!.id).toBe(demoProductId(DEMO_STORE_SLUG, "DS-0001"));
    const p = productFromRow(row!);
    expect(p.title).toBe("Auralis Pro ANC Wireless Headphones");
    expect(p.priceMinor).toBe(expected.products[0]!.priceMinor);
    expect(p.variants).toEqual(expected.products[0]!.variants);
  });

  test("rows read back map to the records that were seeded", async () => {
    const rows = await db.sql<StoreRow[]>`SELECT * FROM stores ORDER BY slug`;
    const stores = rows.map(storeFromRow);
    const lowtrust = stores.find((s) => s.slug === "lowtrust-bazaar")!;
    expect(lowtrust).toMatchObject({ verificationLevel: "BASIC", trustScore: 0.25, operationalStatus: "hidden" });
    const demo = stores.find((s) => s.slug === DEMO_STORE_SLUG)!;
    const built = expected.stores.find((s) => s.slug === DEMO_STORE_SLUG)!;
    expect({ ...demo, createdAt: "", updatedAt: "", lastSyncAt: "" }).toEqual({ ...built, createdAt: "", updatedAt: "", lastSyncAt: "" });
    const products = (await db.sql<ProductRow[]>`SELECT * FROM products WHERE store_slug = 'qualified-eu-shop' ORDER BY external_id`).map(productFromRow);
    expect(products.every((p) => p.currency === "EUR")).toBe(true);
  });

  test("the admin and merchant passwords verify with Bun.password", async () => {
    const [admin] = await db.sql<{ password_hash: string; role: string; id: string }[]>`SELECT id, password_hash, role FROM users WHERE email = 'admin@example.com'`;
    expect(admin!.role).toBe("operator");
    expect(admin!.password_hash).toStartWith("$argon2id$");
    expect(await Bun.password.verify("admin-password", admin!.password_hash)).toBe(true);
    expect(await Bun.password.verify("wrong-password", admin!.password_hash)).toBe(false);
    const [owner] = await db.sql<{ owner_user_id: string }[]>`SELECT owner_user_id FROM stores WHERE slug = ${DEMO_STORE_SLUG}`;
    expect(owner!.owner_user_id).toBe(admin!.id);
    const [merchant] = await db.sql<{ password_hash: string }[]>`SELECT password_hash FROM users WHERE email = 'owner@northwind-outfitters.example'`;
    expect(await Bun.password.verify("merchant-password", merchant!.password_hash)).toBe(true);
  });

  test("the trust inputs are queryable: the demo store has 20+ agent orders and $10,000 GMV in 90 days", async () => {
    const [row] = await db.sql<{ agent: number; buyers: number; gmv: string }[]>`
      SELECT count(*) FILTER (WHERE channel = 'agent')::int AS agent,
             count(DISTINCT buyer_ref)::int AS buyers,
             sum(total_minor)::text AS gmv
      FROM orders WHERE store_slug = ${DEMO_STORE_SLUG} AND created_at > now() - interval '90 days'`;
    expect(row!.agent).toBeGreaterThanOrEqual(20);
    expect(row!.buyers).toBeGreaterThanOrEqual(20);
    expect(Number(row!.gmv)).toBeGreaterThanOrEqual(1_000_000);
  });
});

describe("constraints of the catalog and order tables", () => {
  const refused = async (query: () => Promise<unknown>, pattern: RegExp) => {
    let error: unknown = null;
    try {
      await query();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(pattern);
  };

  test("a negative product price is refused", async () => {
    await refused(
      () => db.sql`INSERT INTO products (store_slug, external_id, title, price_minor, currency) VALUES (${DEMO_STORE_SLUG}, 'neg-1', 'Bad', -1, 'USD')`,
      /products_price_nonneg/,
    );
  });

  test("a negative compare-at price, stock or shipping fee is refused", async () => {
    await refused(
      () => db.sql`INSERT INTO products (store_slug, external_id, title, price_minor, compare_at_price_minor, currency) VALUES (${DEMO_STORE_SLUG}, 'neg-2', 'Bad', 1, -5, 'USD')`,
      /products_compare_at_nonneg/,
    );
    await refused(
      () => db.sql`INSERT INTO products (store_slug, external_id, title, price_minor, currency, stock_quantity) VALUES (${DEMO_STORE_SLUG}, 'neg-3', 'Bad', 1, 'USD', -2)`,
      /products_stock_nonneg/,
    );
    await refused(
      () => db.sql`INSERT INTO shipping_zones (store_slug, name, countries, currency, base_minor, min_days, max_days) VALUES (${DEMO_STORE_SLUG}, 'Bad', '{US}', 'USD', -100, 1, 2)`,
      /shipping_zones_money_nonneg/,
    );
  });

  test("an order with a negative total, or refunded beyond its total, is refused", async () => {
    await refused(
      () => db.sql`INSERT INTO orders (store_slug, channel, buyer_ref, total_minor, currency, payment_rail) VALUES (${DEMO_STORE_SLUG}, 'human', 'x', -1, 'USD', 'card')`,
      /orders_(total_nonneg|refunded_range)/,
    );
    await refused(
      () => db.sql`INSERT INTO orders (store_slug, channel, buyer_ref, total_minor, currency, payment_rail, refunded_minor) VALUES (${DEMO_STORE_SLUG}, 'human', 'x', 100, 'USD', 'card', 101)`,
      /orders_refunded_range/,
    );
  });

  test("unknown enum values are refused", async () => {
    await refused(() => db.sql`UPDATE stores SET verification_level = 'GOLD' WHERE slug = ${DEMO_STORE_SLUG}`, /stores_verification_level_check/);
    await refused(() => db.sql`UPDATE stores SET operational_status = 'paused' WHERE slug = ${DEMO_STORE_SLUG}`, /stores_operational_status_check/);
    await refused(() => db.sql`UPDATE stores SET trust_score = 1.5 WHERE slug = ${DEMO_STORE_SLUG}`, /stores_trust_score_range/);
    await refused(() => db.sql`UPDATE orders SET status = 'lost' WHERE store_slug = ${DEMO_STORE_SLUG}`, /orders_status_check/);
    await refused(
      () => db.sql`INSERT INTO coupons (store_slug, code, kind, value) VALUES (${DEMO_STORE_SLUG}, 'TOOMUCH', 'percent', 150)`,
      /coupons_value_range/,
    );
  });

  test("order events are append-only", async () => {
    await refused(() => db.sql`UPDATE order_events SET type = 'x' WHERE id = (SELECT min(id) FROM order_events)`, /append-only/);
    await refused(() => db.sql`DELETE FROM order_events WHERE id = (SELECT min(id) FROM order_events)`, /append-only/);
  });
});
