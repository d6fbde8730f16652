/**
 * Helper B's LOW (session 22): a shipping zone's `countries` had to be upper case (`["de"]` was 400 on the pattern
 * `^[A-Z]{2}$`), while the shipping estimate's `countryCode` and a checkout's `country_code` take either case. A zone
 * now takes either case too and is stored upper case, as the codes are written everywhere else (`["de", "DE"]` is one
 * DE), so it is matched by a destination given in either case. A code outside ISO 3166-1 is still 400 naming it.
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: Record<string, string>;
let key: TestKey;
let productId: string;
let currency: string;

beforeAll(async () => {
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  const [p] = await srv.db.sql<{ id: string; currency: string }[]>`
    SELECT id, currency FROM products WHERE store_slug = ${SLUG} AND active AND in_stock AND variants = '[]'::jsonb ORDER BY price_minor, id LIMIT 1`;
  productId = p!.id;
  currency = p!.currency;
}, 60_000);

const zones = (body: unknown) => srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, { method: "PUT", headers: owner, body });

test("a zone for ['de', 'DE', 'at'] is stored as DE and AT and quoted for a destination in DE written in either case", async () => {
  const r = await zones({ zones: [{ name: "Germany and Austria", countries: ["de", "DE", "at"], currency, base: 9, minDays: 4, maxDays: 7 }] });
  expect(r.status).toBe(200);
  expect(r.body.data.zones).toBe(1);
  const stored = await srv.db.sql<{ countries: string[] }[]>`SELECT countries FROM shipping_zones WHERE store_slug = ${SLUG}`;
  expect(stored.map((z) => z.countries)).toEqual([["DE", "AT"]]);

  for (const countryCode of ["DE", "de"]) {
    const est = await srv.json("/api/v1/agent/shipping-estimate", { method: "POST", headers: key.headers, body: { productId, countryCode, postalCode: "10115" } });
    expect(est.status).toBe(200);
    expect(est.body.data).toMatchObject({ countryCode: "DE", shippable: true, zone: "Germany and Austria", cost: 9, currency, minDays: 4, maxDays: 7 });
  }
}, 30_000);

test("a lower-case code that is no country is still 400 on its place in the zone, and the zones stay as they were", async () => {
  const r = await zones({ zones: [{ name: "Nowhere", countries: ["de", "zz"], currency, base: 9, minDays: 4, maxDays: 7 }] });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "zones.0.countries.1" } });
  expect(r.body.error).toBe("Invalid zones.0.countries.1: zz is not an ISO 3166-1 alpha-2 country code");
  const stored = await srv.db.sql<{ countries: string[] }[]>`SELECT countries FROM shipping_zones WHERE store_slug = ${SLUG}`;
  expect(stored.map((z) => z.countries)).toEqual([["DE", "AT"]]);
}, 30_000);
