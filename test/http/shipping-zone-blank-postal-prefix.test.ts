/**
 * Audit W-2: a postal prefix of white space only is refused (400 validation_error naming it, nothing written). It
 * was stored as the empty prefix once its white space was removed, which every postal code starts with: the zone
 * then priced every address of its countries, ahead of the country-wide zone (a prefix match is more specific).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
let srv: TestServer;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

test("PUT /shipping-zones with a blank postal prefix: 400 on zones.1.postalPrefixes.0, the stored zones unchanged", async () => {
  const before = await srv.db.sql`SELECT name, postal_prefixes FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`;
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, {
    method: "PUT",
    headers: owner,
    body: {
      zones: [
        { name: "US", countries: ["US"], currency: "USD", base: 5, minDays: 2, maxDays: 4 },
        { name: "US islands", countries: ["US"], postalPrefixes: ["   "], currency: "USD", base: 50, minDays: 7, maxDays: 14 },
      ],
    },
  });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "zones.1.postalPrefixes.0" } });
  expect(r.body.details.errors).toEqual([{ field: "zones.1.postalPrefixes.0", message: "must contain a character other than white space" }]);
  const after = await srv.db.sql`SELECT name, postal_prefixes FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`;
  expect(after).toEqual(before);
});

test("PUT /shipping-zones: white space inside a prefix is still removed (\"sw1 a\" is stored as SW1A)", async () => {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, {
    method: "PUT",
    headers: owner,
    body: {
      zones: [
        { name: "GB", countries: ["GB"], currency: "USD", base: 5, minDays: 2, maxDays: 4 },
        { name: "GB central", countries: ["GB"], postalPrefixes: ["sw1 a", " EC1 "], currency: "USD", base: 9, minDays: 1, maxDays: 2 },
      ],
    },
  });
  expect(r.status).toBe(200);
  const [z] = await srv.db.sql<{ postal_prefixes: string[] }[]>`SELECT postal_prefixes FROM shipping_zones WHERE store_slug = ${SLUG} AND name = 'GB central'`;
  expect(z!.postal_prefixes).toEqual(["SW1A", "EC1"]);
});
