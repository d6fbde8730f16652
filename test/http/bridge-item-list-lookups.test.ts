/**
 * Review R-1: audit B-5's bound on the different items of an ACP/UCP create or update (at most MAX_CART_LINES = 100,
 * else 400 on the list) was checked only after common.ts `resolveItemIds`, which ran one `variants @>` probe per bare
 * id naming no product: 150 different unknown ids cost 150 statements before the 400, and 10,000 (the JSON array
 * bound, ~0.5 MB) 10,000 statements in one request (~26 s, holding a pooled connection). The ids are now read and the
 * lines counted before any statement, and the unknown bare ids of a list within the bound are probed in one statement.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP, sendAs } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // demo-store, 2 variants

let srv: TestServer;
let key: TestKey;
/** Statements reading `products` (the id check and the variant probe) since the last reset. */
let productReads = 0;
let variantProbes = 0;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const svc = srv.running.services as unknown as { sql: (...a: unknown[]) => unknown };
  svc.sql = new Proxy(svc.sql, {
    apply(target, self, args) {
      const text = Array.isArray(args[0]) ? args[0].join("") : "";
      if (text.includes("variants @>")) variantProbes++;
      if (/FROM products\b/.test(text)) productReads++;
      return Reflect.apply(target, self, args);
    },
  });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const unknownIds = (n: number) => Array.from({ length: n }, () => crypto.randomUUID());
function counted<T>(work: () => Promise<T>): Promise<{ result: T; productReads: number; variantProbes: number }> {
  productReads = 0;
  variantProbes = 0;
  return work().then((result) => ({ result, productReads, variantProbes }));
}

describe("ACP and UCP item lists: the line bound comes before any lookup, and unknown ids are probed in one statement", () => {
  test("an ACP create naming 150 different items is refused 400 on the list without reading a product", async () => {
    const { result: r, productReads: reads } = await counted(() => sendAs(srv, key, "POST", ACP, { items: unknownIds(150).map((id) => ({ id, quantity: 1 })) }));
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", param: "$.items" });
    expect(reads).toBe(0);
  });

  test("an ACP create at the JSON array bound (10,000 different ids) is refused without reading a product", async () => {
    const { result: r, productReads: reads } = await counted(() => sendAs(srv, key, "POST", ACP, { items: unknownIds(10_000).map((id) => ({ id })) }));
    expect(r.status).toBe(400);
    expect(r.body.param).toBe("$.items");
    expect(reads).toBe(0);
  }, 60_000);

  test("a UCP create and an ACP items update over the bound are refused without reading a product", async () => {
    const ucp = await counted(() => sendAs(srv, key, "POST", UCP, { line_items: unknownIds(101).map((id) => ({ item: { id }, quantity: 1 })) }));
    expect(ucp.result.status).toBe(400);
    expect(ucp.result.body.messages[0].path).toBe("$.line_items");
    expect(ucp.productReads).toBe(0);

    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    expect(made.status).toBe(201);
    const update = await counted(() => sendAs(srv, key, "POST", `${ACP}/${made.body.id}`, { items: unknownIds(101).map((id) => ({ id, quantity: 1 })) }));
    expect(update.result.status).toBe(400);
    expect(update.result.body.param).toBe("$.items");
    expect(update.variantProbes).toBe(0);
  });

  test("a create of 100 different unknown ids probes them as variant ids in one statement", async () => {
    const { result: r, variantProbes: probes } = await counted(() => sendAs(srv, key, "POST", ACP, { items: unknownIds(100).map((id) => ({ id, quantity: 1 })) }));
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(probes).toBe(1);
  });

  test("a bare variant id among unknown ids is still refused with its qualified item ids, named by its first entry", async () => {
    const detail = await srv.json(`/api/v1/agent/products/${HEADPHONES}`, { headers: key.headers });
    const variant = detail.body.data.variants[0].id as string;
    const [a, b] = unknownIds(2);
    const items = [a, BOARD, b, variant, a, variant].map((id) => ({ id, quantity: 1 }));
    const { result: r, variantProbes: probes } = await counted(() => sendAs(srv, key, "POST", ACP, { items }));
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", param: "$.items[3].id", details: { variant_id: variant, item_ids: [`${HEADPHONES}:${variant}`] } });
    expect(probes).toBe(1);
  });
});
