/**
 * Audit E [x402]: what the service advertises about x402 is what a checkout does. On the embedded default the demo
 * store has a wallet but no facilitator and X402_FACILITATOR_ALLOWLIST is empty, so no x402 payment can settle:
 * the protocols page and /health used to say x402 was configured, and every checkout was refused with
 * facilitator_not_allowed without saying which facilitators are allowed.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { connect, structured } from "../mcp/helpers.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, demo-store, 36.95
const DEMO_WALLET = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"; // the demo store's configured wallet (migration 0060)
const ALLOWED = "http://127.0.0.1:9";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const x402Entry = async () => {
  const r = await srv.json("/api/v1/agent/merchants/demo-store/protocols", { headers: key.headers });
  expect(r.status).toBe(200);
  return r.body.data.protocols.find((p: { id: string }) => p.id === "x402");
};
const healthX402 = async (): Promise<boolean> => {
  await Bun.sleep(1100); // the health probe is cached for a second
  return (await srv.json("/api/v1/health")).body.data.protocols.x402;
};
const newCart = async (): Promise<string> => {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
};
const x402Checkout = async (extra: Record<string, unknown>) =>
  srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: await newCart(), payment_rail: "x402", ...extra } });
const config = (facilitator: string) => ({ merchant_wallet_address: DEMO_WALLET, network: "eip155:84532", facilitator_url: facilitator });
const setAllowlist = (csv: string) => {
  srv.running.services.config.X402_FACILITATOR_ALLOWLIST = csv;
};

describe("x402 with no facilitator configured or allowed (the embedded default)", () => {
  test("the protocols page says x402 is not usable here and why, and /health does not claim it", async () => {
    expect(await x402Entry()).toMatchObject({
      id: "x402",
      configured: false,
      reason: "no_facilitator",
      message: expect.stringContaining("X402_FACILITATOR_ALLOWLIST"),
      merchant_wallet_address: DEMO_WALLET,
      facilitator_url: null,
      allowed_facilitators: [],
    });
    expect(await healthX402()).toBe(false);
  });

  test("an x402 checkout is refused as not configured, saying that no facilitator is configured or allowed", async () => {
    const r = await x402Checkout({ x402_config: config("http://127.0.0.1:9/") });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "PAYMENT_METHOD_NOT_CONFIGURED", details: { merchant_slug: "demo-store", rail: "x402", reason: "no_facilitator", allowed_facilitators: [] } });
    expect(r.body.error).toContain("no x402 facilitator configured");
  });

  test("x402_config stays required with pay_with_wallet (spec), and the refusal says where its values are", async () => {
    const r = await x402Checkout({ pay_with_wallet: true });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: { field: "x402_config" } });
    expect(r.body.error).toContain("/api/v1/agent/merchants/{slug}/protocols");
  });
});

describe("x402 with an operator-allowed facilitator", () => {
  test("the protocols page lists the allowed facilitators, a refused URL names them, and the allowed one gets the 402 challenge", async () => {
    setAllowlist(ALLOWED);
    try {
      expect(await x402Entry()).toMatchObject({ configured: true, facilitator_url: null, allowed_facilitators: [ALLOWED] });
      expect((await x402Entry()).reason).toBeUndefined();
      expect(await healthX402()).toBe(true);

      const refused = await x402Checkout({ x402_config: config("http://127.0.0.1:10/") });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "x402_config.facilitator_url", reason: "facilitator_not_allowed", allowed_facilitators: [ALLOWED] } });
      expect(refused.body.error).toContain(ALLOWED);

      const challenge = await x402Checkout({ x402_config: config(ALLOWED) });
      expect(challenge.status).toBe(402);
      expect(challenge.headers.get("payment-required")).toBeString();
    } finally {
      setAllowlist("");
    }
  });
});

describe("x402 with the merchant's own facilitator", () => {
  test("the protocols page shows it as the facilitator to use", async () => {
    await srv.db.sql`UPDATE store_x402_config SET facilitator_url = ${ALLOWED} WHERE store_slug = 'demo-store'`;
    try {
      expect(await x402Entry()).toMatchObject({ configured: true, facilitator_url: ALLOWED, allowed_facilitators: [] });
      expect(await healthX402()).toBe(true);
    } finally {
      await srv.db.sql`UPDATE store_x402_config SET facilitator_url = NULL WHERE store_slug = 'demo-store'`;
    }
  });
});

describe("MCP get_supported_protocols", () => {
  const mcpEntries = async () => {
    const mcp = await connect(srv);
    try {
      const r = await mcp.call("get_supported_protocols");
      expect(r.isError).toBeFalsy();
      return structured<{ protocols: { id: string }[] }>(r).protocols;
    } finally {
      await mcp.close();
    }
  };
  const restEntries = async () => {
    const r = await srv.json("/api/v1/agent/merchants/demo-store/protocols", { headers: key.headers });
    expect(r.status).toBe(200);
    return r.body.data.protocols;
  };

  test("shows the same x402 entry as the protocols page: not configured (no_facilitator) by default, configured once a facilitator is allowed", async () => {
    const byDefault = await mcpEntries();
    expect(byDefault.find((p) => p.id === "x402")).toMatchObject({ configured: false, reason: "no_facilitator", merchant_wallet_address: DEMO_WALLET });
    expect(byDefault).toEqual(await restEntries());
    setAllowlist(ALLOWED);
    try {
      const allowed = await mcpEntries();
      expect(allowed.find((p) => p.id === "x402")).toMatchObject({ configured: true, facilitator_url: null, allowed_facilitators: [ALLOWED] });
      expect(allowed).toEqual(await restEntries());
    } finally {
      setAllowlist("");
    }
  });
});
