/**
 * The approval-hold guard (actors/cart/hold-guard.ts: is the key blocked at a leg's store, how many unpaid checkouts
 * does the caller hold) is read in the statement that reads the attempt's risk inputs — with the catalog when the
 * completion follows a preview, on its own in a one-call checkout — not in a statement of its own (issue #6: one
 * statement fewer per payment attempt). What it answers is unchanged (test/http/approval-hold-bounds.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store DS-0005, tracked stock

let srv: TestServer;
let owner: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** The statement texts the service's pool runs while `fn` runs (background statements included). */
async function statementsDuring(fn: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const pool = srv.running.db.sql;
  pool.options.debug = (_connection: number, query: string) => void seen.push(query);
  try {
    await fn();
  } finally {
    pool.options.debug = false;
  }
  return seen;
}

async function cart(k: TestKey): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

// Not the hold, which takes the key's binding and reads the block under its lock (commerce.ts bindingOf): a statement the attempt makes anyway.
const guardReads = (texts: string[]) => texts.filter((q) => q.includes("store_agent_allowlist") && q.includes("status = 'blocked'") && !q.includes("INSERT INTO store_agent_allowlist"));

describe("the hold guard rides in the attempt's risk read", () => {
  test("a completion after a preview reads the hold guard, the risk inputs and the catalog in one statement", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const cartId = await cart(k);
    const preview = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: k.headers, body: { cartId } });
    expect(preview.status).toBe(200);
    let status = 0;
    const texts = await statementsDuring(async () => {
      const r = await srv.json("/api/v1/agent/checkout", {
        method: "POST",
        headers: k.headers,
        body: { cartId, checkout_session_id: preview.body.data.checkout_session_id, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() },
      });
      status = r.status;
    });
    expect(status).toBe(200);
    const reads = guardReads(texts);
    expect(reads).toHaveLength(1);
    expect(reads[0]).toContain("risk_recent");
    expect(reads[0]).toContain("FROM products p");
  });

  test("a one-call checkout reads the hold guard with the risk inputs in one statement", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const cartId = await cart(k);
    let status = 0;
    const texts = await statementsDuring(async () => {
      const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { cartId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() } });
      status = r.status;
    });
    expect(status).toBe(200);
    const reads = guardReads(texts);
    expect(reads).toHaveLength(1);
    expect(reads[0]).toContain("risk_recent");
  });

  test("the risk read asked for the guard answers the stores that blocked the key, with or without a product found", async () => {
    const { readCatalogWithRisk, readRiskInputs } = await import("../../actors/store/commerce.ts");
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const block = await srv.json(`/api/v1/merchant/stores/demo-store/allowlist/${k.id}`, { method: "POST", headers: { authorization: `Bearer ${owner}` }, body: { status: "blocked" } });
    expect(block.status).toBe(200);
    const ask = { keyId: k.id, sessionId: crypto.randomUUID(), storeSlugs: ["demo-store", "demo-store", "elsewhere"] };
    const expected = { blockedAt: ["demo-store"], holding: [] };
    const sql = srv.db.sql;
    expect((await readRiskInputs(sql, k.id, undefined, ask)).holdGuard).toEqual(expected);
    expect((await readCatalogWithRisk(sql, [SKILLET], k.id, undefined, ask)).risk.holdGuard).toEqual(expected);
    expect((await readCatalogWithRisk(sql, ["00000000-0000-0000-0000-000000000000"], k.id, undefined, ask)).risk.holdGuard).toEqual(expected);
    // not asked, not read
    expect((await readRiskInputs(sql, k.id)).holdGuard).toBeUndefined();
    expect((await readRiskInputs(sql, k.id, undefined, { ...ask, storeSlugs: ["elsewhere"] })).holdGuard).toEqual({ blockedAt: [], holding: [] });
  });
});
