/**
 * Audit A-1: POST /agent/shipping-estimate quotes what the cart then charges. For every seeded shipping zone of a US,
 * an EU, a UK merchant and one with two shipping methods (Standard and Express), at quantities 1 and 2, for a cheap
 * product (fees charged) and an expensive one (free-shipping thresholds), the estimate's cost equals the shipping of
 * a preview of a cart with that product and quantity to the same destination. Before the fix the estimate charged
 * one per-item fee less, and called a zone without its own threshold free once the store's domestic one was reached.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const STORES = ["demo-store", "qualified-eu-shop", "harbour-lane-uk", "summit-sports-co"];
/** A postal code of the country that none of the seed's postal-prefix zones claims. */
const PLAIN_POSTAL: Record<string, string> = { US: "10001", CA: "M5V 2T6", GB: "SW1A 1AA", DE: "10115" };

interface Zone {
  id: string;
  store_slug: string;
  name: string;
  countries: string[];
  postal_prefixes: string[];
}

let srv: TestServer;
let key: TestKey;
let zones: Zone[];
const products = new Map<string, { cheap: string; dear: string }>();

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  zones = await srv.db.sql<Zone[]>`
    SELECT id, store_slug, name, countries, postal_prefixes FROM shipping_zones WHERE store_slug = ANY(${STORES}) ORDER BY store_slug, name`;
  for (const slug of STORES) {
    const rows = await srv.db.sql<{ id: string }[]>`
      SELECT id FROM products
      WHERE store_slug = ${slug} AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) AND variants = '[]'::jsonb
      ORDER BY price_minor, id`;
    products.set(slug, { cheap: rows[0]!.id, dear: rows[rows.length - 1]!.id });
  }
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

/** A destination the zone serves: its first country, with its first postal prefix when it has any. */
function destinationOf(z: Zone): { country: string; postal: string } {
  const country = z.countries[0]!;
  return { country, postal: z.postal_prefixes.length ? `${z.postal_prefixes[0]}01` : (PLAIN_POSTAL[country] ?? "1000") };
}

describe("the shipping estimate equals the shipping a preview charges", () => {
  test("for every seeded zone of four merchants, quantities 1 and 2, a cheap and an expensive product", async () => {
    expect(zones.length).toBeGreaterThanOrEqual(11);
    const mismatches: string[] = [];
    let compared = 0;
    let charged = 0;
    let free = 0;
    for (const z of zones) {
      const { country, postal } = destinationOf(z);
      for (const which of ["cheap", "dear"] as const) {
        const productId = products.get(z.store_slug)![which];
        for (const quantity of [1, 2]) {
          const est = await post("/shipping-estimate", { productId, countryCode: country, postalCode: postal, quantity });
          expect(est.status).toBe(200);
          expect(est.body.data.shippable).toBe(true);
          // where the merchant has several methods the estimate quotes the cheapest; the preview is asked for that one
          const quoted = zones.find((o) => o.store_slug === z.store_slug && o.name === est.body.data.zone);
          expect(quoted, `${z.store_slug} ${country} ${postal}: estimate zone ${est.body.data.zone}`).toBeDefined();
          const cart = await post("/cart", { items: [{ product_id: productId, quantity }] });
          expect(cart.status).toBe(201);
          const pv = await post("/checkout/preview", { cartId: cart.body.data.id, shipping: { country_code: country, postal_code: postal, option_id: quoted!.id } });
          expect(pv.status, JSON.stringify(pv.body)).toBe(200);
          const merchant = pv.body.data.merchants[0];
          compared++;
          if (est.body.data.cost === 0) free++;
          else charged++;
          const label = `${z.store_slug} zone ${z.name} (${country} ${postal}) ${which} qty ${quantity}`;
          if (merchant.shipping_option.name !== est.body.data.zone) mismatches.push(`${label}: zone ${est.body.data.zone} vs ${merchant.shipping_option.name}`);
          if (merchant.shipping !== est.body.data.cost) mismatches.push(`${label}: estimate ${est.body.data.cost} vs preview ${merchant.shipping}`);
          if (est.body.data.freeShipping !== (merchant.shipping === 0)) mismatches.push(`${label}: freeShipping ${est.body.data.freeShipping} vs preview ${merchant.shipping}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
    // the sample exercises both the fee formula and the free-shipping thresholds
    expect(compared).toBe(zones.length * 4);
    expect(charged).toBeGreaterThan(20);
    expect(free).toBeGreaterThan(0);
  }, 240_000);

  test("a zone without its own free-shipping threshold is charged even above the store's domestic threshold", async () => {
    const tent = products.get("demo-store")!.dear;
    const est = await post("/shipping-estimate", { productId: tent, countryCode: "US", postalCode: "99501", quantity: 1 });
    expect(est.body.data).toMatchObject({ zone: "Alaska & Hawaii", cost: 21.99, freeShipping: false, freeShippingOver: null });
  });
});
