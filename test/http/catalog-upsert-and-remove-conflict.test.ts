/**
 * Helper B's LOW (session 22): a product listed in both `products` and `remove` of one PUT /catalog batch was answered
 * as upserted (in `upserted`, with an id) and then removed by the same batch (`removed: 1`, the product inactive), so
 * the answer said the opposite of what was stored. The two instructions contradict each other, and neither wins: the
 * item is rejected per item on `externalId`, naming the conflict, nothing of it is written, and its `remove` entry is
 * not applied either (docs/catalog.md). The rest of the batch (other items, other removals) is written as before.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const CONFLICT = "is also in this batch's remove: send a product in products or in remove, not both (neither was applied)";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: Record<string, string>;

beforeAll(async () => {
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);

const product = (externalId: string, title: string, price = 12) => ({ externalId, title, price, currency: "USD" });
const catalog = (body: unknown) => srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: owner, body });
const rows = async (externalIds: string[]) =>
  [...(await srv.db.sql<{ external_id: string; title: string; active: boolean }[]>`
    SELECT external_id, title, active FROM products WHERE store_slug = ${SLUG} AND external_id = ANY(${externalIds}) ORDER BY external_id`)];

test("a product both upserted and removed in one batch is rejected on externalId, and neither its upsert nor its removal is applied", async () => {
  const setup = await catalog({ products: [product("BOTH-OLD", "Linen throw as stored"), product("BOTH-GONE", "Jute rug to take out")] });
  expect(setup.status).toBe(200);
  expect(setup.body.data.accepted).toBe(2);

  const r = await catalog({
    products: [product("BOTH-NEW", "Cotton cushion"), product("BOTH-OLD", "Linen throw renamed", 14), product("BOTH-FRESH", "Wool blanket never stored")],
    remove: ["BOTH-OLD", "BOTH-GONE", "BOTH-FRESH"],
  });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  expect(r.body.data.accepted).toBe(1);
  expect(r.body.data.rejected).toEqual([
    { index: 1, externalId: "BOTH-OLD", errors: [{ field: "externalId", message: CONFLICT }] },
    { index: 2, externalId: "BOTH-FRESH", errors: [{ field: "externalId", message: CONFLICT }] },
  ]);
  expect(r.body.data.upserted.map((u: { index: number; externalId: string }) => [u.index, u.externalId])).toEqual([[0, "BOTH-NEW"]]);
  expect(r.body.data.removed).toBe(1);
  expect(await rows(["BOTH-NEW", "BOTH-OLD", "BOTH-GONE", "BOTH-FRESH"])).toEqual([
    { external_id: "BOTH-GONE", title: "Jute rug to take out", active: false },
    { external_id: "BOTH-NEW", title: "Cotton cushion", active: true },
    { external_id: "BOTH-OLD", title: "Linen throw as stored", active: true },
  ]);
}, 30_000);

test("an item already rejected for another reason also names the conflict, and its remove entry is not applied", async () => {
  expect((await catalog({ products: [product("BOTH-BAD", "Vase as stored")] })).body.data.accepted).toBe(1);
  const r = await catalog({ products: [product("BOTH-BAD", "Vase with three decimals", 5.999)], remove: ["BOTH-BAD"] });
  expect(r.status).toBe(200);
  expect(r.body.data.accepted).toBe(0);
  expect(r.body.data.removed).toBe(0);
  expect(r.body.data.rejected).toEqual([
    { index: 0, externalId: "BOTH-BAD", errors: [{ field: "price", message: "more decimals than USD has (2)" }, { field: "externalId", message: CONFLICT }] },
  ]);
  expect(await rows(["BOTH-BAD"])).toEqual([{ external_id: "BOTH-BAD", title: "Vase as stored", active: true }]);
}, 30_000);
