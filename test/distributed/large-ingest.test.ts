/**
 * Audit A3-1: over NATS an actor message is one NATS message, and the server refuses one above its max_payload
 * (1 MB by default, as infra/nats/cluster.conf), while PUT /catalog takes 8 MiB, POST /orders 500 orders and the
 * dashboard upload 1,000 lines at a time. Such a batch was resent for 60 s, then answered 503 "retry shortly"; it
 * could never succeed. The gateway now sends a large batch in parts under a byte budget (gateway/rest/ingest-parts.ts)
 * and answers it as one batch: the same counts, the same per-item results with the whole batch's indexes.
 * One `bun gateway/main.ts actors` and one `… gateway` over a private 1-node nats-server (default max_payload).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { repeatMessage } from "../../actors/store/import-file.ts";
import { dashboardSession } from "../helpers/dashboard.ts";
import type { TestServer } from "../helpers/server.ts";
import type { TestDatabase } from "../helpers/db.ts";
import { json as fetchJson, startDeployment, type Deployment } from "../helpers/deployment.ts";

const SLUG = "bulk-goods";
const EMAIL = `owner@${SLUG}.example`;
const PASSWORD = "merchant-password";

let dep: Deployment | undefined;
let maxPayload = 0;
let db: TestDatabase;
let gw: string;
let token: string;

const json = (path: string, init?: Parameters<typeof fetchJson>[1]) => fetchJson(gw + path, init);

beforeAll(async () => {
  const d = await startDeployment(
    {
      prefix: "acs-dist-ingest-",
      nats: "single",
      users: [{ email: EMAIL, password: PASSWORD, role: "merchant" }],
      seed: async (db) => {
        await db.sql`INSERT INTO stores (slug, name, country, owner_user_id) SELECT ${SLUG}, 'Bulk Goods', 'US', id FROM users WHERE email = ${EMAIL}`;
      },
      env: { SECRET_KEY: "cd".repeat(32), METRICS_PORT: "0", ACTOR_PARTITIONS: "8", RATE_LIMITS_ENABLED: "false" },
    },
    (started) => (dep = started),
  );
  db = d.db;
  maxPayload = d.maxPayload;
  gw = d.gateways[0]!;
  const login = await json("/api/v1/auth/login", { method: "POST", body: { email: EMAIL, password: PASSWORD } });
  expect(login.status).toBe(200);
  token = login.body.data.token;
}, 90_000);

afterAll(async () => {
  await dep?.stop();
});

/** An ordinary product with a 1.1 KB description: 1,000 of them are about 1.4 MB. */
const product = (externalId: string, title: string, price = 19.99) => ({
  externalId,
  title,
  description: `${title}. `.padEnd(1100, "Hand-finished, sustainably sourced and built to last for years of daily use. "),
  brand: "Bulk Goods",
  category: "Home",
  price,
  currency: "USD",
  stockQuantity: 5,
});

const auth = () => ({ authorization: `Bearer ${token}` });

describe("ingestion batches larger than the NATS max_payload", () => {
  test("PUT /catalog with 1,000 products (1.4 MB) answers 200 at once with the one-batch answer: per-item rejections by index, an in-batch repeat across parts, removals", async () => {
    const gone = await json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: auth(), body: { products: [product("GONE-1", "Old stock")] } });
    expect(gone.status).toBe(200);

    const products: unknown[] = Array.from({ length: 1000 }, (_, i) => product(`BIG-${i}`, `Bulk item ${i}`));
    products[10] = { ...(products[10] as object), price: -1 };
    products[500] = 42;
    products[999] = product("BIG-0", "Bulk item 0 listed again", 5);
    const body = { products, remove: ["GONE-1", "GONE-1", "NEVER-EXISTED"] };
    expect(Buffer.byteLength(JSON.stringify(body))).toBeGreaterThan(maxPayload);

    const started = performance.now();
    const r = await json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: auth(), body });
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d.accepted).toBe(997);
    expect(d.removed).toBe(1);
    expect(typeof d.syncedAt).toBe("string");
    expect(d.rejected.map((x: { index: number }) => x.index)).toEqual([10, 500, 999]);
    expect(d.rejected[0]).toMatchObject({ index: 10, externalId: "BIG-10" });
    expect(d.rejected[0].errors[0].field).toBe("price");
    expect(d.rejected[1]).toEqual({ index: 500, externalId: null, errors: [{ field: "(item)", message: "must be an object" }] });
    expect(d.rejected[2]).toEqual({ index: 999, externalId: "BIG-0", errors: [{ field: "externalId", message: "repeated in this batch" }] });
    const indexes = d.upserted.map((u: { index: number }) => u.index);
    expect(indexes).toEqual(Array.from({ length: 1000 }, (_, i) => i).filter((i) => ![10, 500, 999].includes(i)));
    for (const u of d.upserted) expect(u.externalId).toBe(`BIG-${u.index}`);

    const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'BIG-%'`;
    expect(n).toBe(997);
    const [first] = await db.sql<{ id: string; title: string; price_minor: number }[]>`
      SELECT id, title, price_minor::int AS price_minor FROM products WHERE store_slug = ${SLUG} AND external_id = 'BIG-0'`;
    expect(first).toEqual({ id: d.upserted[0].id, title: "Bulk item 0", price_minor: 1999 });
    const [old] = await db.sql<{ active: boolean }[]>`SELECT active FROM products WHERE store_slug = ${SLUG} AND external_id = 'GONE-1'`;
    expect(old!.active).toBe(false);
  }, 60_000);

  test("POST /orders with 500 orders (over 1 MB) answers 201 at once, a repeated externalId in a later part is the earlier order's duplicate", async () => {
    const items = Array.from({ length: 10 }, (_, k) => ({ externalId: `BIG-${k + 1}`, title: `Bulk item ${k + 1} `.padEnd(200, "x"), quantity: 1, unitPrice: 19.99 }));
    const orders: unknown[] = Array.from({ length: 500 }, (_, i) => ({ externalId: `ORD-${i}`, buyer: `buyer${i}@example.com`, status: "delivered", currency: "USD", items }));
    orders[499] = { ...(orders[0] as object) };
    orders[250] = { externalId: "ORD-BAD", buyer: "x@example.com", status: "lost", currency: "USD", items };
    expect(Buffer.byteLength(JSON.stringify({ orders }))).toBeGreaterThan(maxPayload);

    const started = performance.now();
    const r = await json(`/api/v1/merchant/stores/${SLUG}/orders`, { method: "POST", headers: auth(), body: { orders } });
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(r.status).toBe(201);
    const d = r.body.data;
    expect(d.accepted).toBe(499);
    expect(d.rejected.map((x: { index: number; externalId: string }) => [x.index, x.externalId])).toEqual([[250, "ORD-BAD"]]);
    expect(d.orders).toHaveLength(499);
    expect(d.orders.map((o: { index: number }) => o.index)).toEqual(Array.from({ length: 500 }, (_, i) => i).filter((i) => i !== 250));
    const last = d.orders[498];
    expect(last).toMatchObject({ index: 499, externalId: "ORD-0", duplicate: true, orderId: d.orders[0].orderId });
    expect(d.orders.filter((o: { duplicate: boolean }) => o.duplicate)).toHaveLength(1);
    const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM merchant_order_refs WHERE store_slug = ${SLUG}`;
    expect(n).toBe(498);
  }, 60_000);

  test("the dashboard's JSONL upload of 1,000 products (1.4 MB) is imported, with the file's repeat rule across parts", async () => {
    const srv = { fetch: (path: string, init?: RequestInit) => fetch(gw + path, init) } as unknown as TestServer;
    const s = await dashboardSession(srv, SLUG);
    const lines = Array.from({ length: 1000 }, (_, i) => JSON.stringify(product(`UP-${i}`, `Uploaded item ${i}`)));
    lines[998] = JSON.stringify(product("UP-3", "Uploaded item 3 again"));
    expect(Buffer.byteLength(lines.join("\n"))).toBeGreaterThan(maxPayload);
    const fd = new FormData();
    fd.append("_csrf", s.csrf);
    fd.append("file", new File([lines.join("\n")], "big.jsonl", { type: "application/x-ndjson" }));
    const started = performance.now();
    const r = await fetch(`${gw}/dashboard/s/${SLUG}/catalog/upload`, { method: "POST", headers: { cookie: s.cookie }, body: fd });
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(r.status).toBe(200);
    const page = await r.text();
    expect(/<p role="status">(.*?)<\/p>/.exec(page)?.[1]).toBe("1000 lines read: <strong>999 accepted</strong>, <strong>1 rejected</strong>.");
    const rows = [...page.matchAll(/<tr><td data-label="Line">(\d+)<\/td><td data-label="External id">([^<]*)<\/td><td data-label="Errors">([^<]*)<\/td><\/tr>/g)].map((m) => m.slice(1));
    expect(rows).toEqual([["999", "UP-3", `externalId: ${repeatMessage(4)}`]]);
    const [{ n }] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'UP-%'`;
    expect(n).toBe(999);
  }, 60_000);
});
