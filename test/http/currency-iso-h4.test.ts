/**
 * Currencies outside ISO 4217 (actors/store/schemas.ts ISO_CURRENCY_CODES, the one list) are refused where a caller
 * names one: the REST negotiation bid, the AP2 payment mandate's amounts, MCP issue_payment_mandate (before the
 * human is asked). AP2 reads a mandate amount with the currency's own decimals (currencyExponent), not "2 unless
 * JPY or KRW".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { toMinor } from "../../gateway/bridge/ap2.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, errorOf } from "../mcp/helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, 26.95 USD

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

describe("ISO 4217 currencies", () => {
  test("a negotiation bid in ZZZ is 400 validation_error on currency, before any offer is made", async () => {
    const r = await post("/negotiate", { productId: BOARD, merchantSlug: "demo-store", bidPrice: 20, currency: "ZZZ" });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      success: false,
      code: "validation_error",
      error: "Invalid body field 'currency': ZZZ is not an ISO 4217 currency code",
      details: { location: "body", field: "currency" },
    });
    const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM negotiation_offers WHERE product_id = ${BOARD}`;
    expect(n.n).toBe(0);
  });

  test("an AP2 payment mandate in ZZZ is 400 INVALID_ARGUMENT naming the amount's currency", async () => {
    const cart = await post("/cart", { items: [{ product_id: BOARD, quantity: 1 }] });
    expect(cart.status).toBe(201);
    const contents = {
      payment_mandate_id: `pm_${crypto.randomUUID()}`,
      payment_details_id: "details_1",
      payment_details_total: { label: "Total", amount: { currency: "ZZZ", value: 100 } },
      payment_response: { method_name: "CARD", details: { token: "tok_approve" } },
      merchant_agent: "demo-store",
      timestamp: new Date().toISOString(),
    };
    const r = await post("/ap2/payment-mandates", { cart_id: cart.body.data.id, payment_mandate: { payment_mandate_contents: contents, user_authorization: "x.y.z" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      success: false,
      code: "INVALID_ARGUMENT",
      error: "payment_details_total.amount.currency: ZZZ is not an ISO 4217 currency code.",
      details: { field: "payment_mandate.payment_mandate_contents.payment_details_total.amount.currency", value: "ZZZ" },
    });
  });

  test("AP2 reads mandate amounts with the currency's decimals (3 for KWD and BHD, 0 for JPY, 2 for USD)", () => {
    expect(toMinor(1.234, "KWD")).toBe(1234);
    expect(toMinor("10.5", "BHD")).toBe(10500);
    expect(toMinor(1.2345, "KWD")).toBeNull();
    expect(toMinor(100, "JPY")).toBe(100);
    expect(toMinor(100.5, "JPY")).toBeNull();
    expect(toMinor("26.950", "USD")).toBe(2695);
  });

  test("MCP issue_payment_mandate in ZZZ is INVALID_ARGUMENT on currency, and the human is not asked", async () => {
    const c = await connect(srv, { headers: key.headers, elicit: () => ({ action: "accept", content: { approve: true } }) });
    try {
      const r = await c.call("issue_payment_mandate", { max_amount: 150, currency: "ZZZ" });
      expect(errorOf(r)).toMatchObject({ code: "INVALID_ARGUMENT", message: "currency: ZZZ is not an ISO 4217 currency code.", details: { field: "currency" } });
      expect(c.elicitations).toHaveLength(0);
    } finally {
      await c.close();
    }
  }, 60_000);
});
