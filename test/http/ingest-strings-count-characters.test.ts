/**
 * Helper B's LOW (session 22): merchant ingestion bounded item strings in UTF-16 units (TypeBox's t.String), so a
 * product title of 300 emoji (600 units) was refused as over 500, while docs/conventions.md bounds strings in
 * characters (code points) and the database's own check (`length(title) BETWEEN 1 AND 500`) counts characters too.
 * The item schemas (actors/store/schemas.ts, ingest.ts) now use the `CodePointString` kind of the other routes
 * (infra/code-point-string.ts), which the store actor loads with them, so the gateway and the actor count alike: 300
 * emoji are a title, 501 characters are not, and an external id of 200 emoji can be synced, have its stock set and be
 * removed.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: Record<string, string>;

beforeAll(async () => {
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);

const call = (method: string, what: string, body: unknown) => srv.json(`/api/v1/merchant/stores/${SLUG}/${what}`, { method, headers: owner, body });
const product = (over: Record<string, unknown>) => ({ title: "Oak tray", price: 12, currency: "USD", ...over });

test("a title of 300 emoji is accepted and stored whole; a title of 501 characters is refused as over 500 characters", async () => {
  const emoji = "🌿".repeat(300);
  const r = await call("PUT", "catalog", {
    products: [product({ externalId: "CHARS-EMOJI", title: emoji }), product({ externalId: "CHARS-LONG", title: "x".repeat(501) }), product({ externalId: "CHARS-EMOJI-LONG", title: "🌿".repeat(501) })],
  });
  expect(r.status).toBe(200);
  expect(r.body.data.accepted).toBe(1);
  expect(r.body.data.upserted.map((u: { externalId: string }) => u.externalId)).toEqual(["CHARS-EMOJI"]);
  expect(r.body.data.rejected).toEqual([
    { index: 1, externalId: "CHARS-LONG", errors: [{ field: "title", message: `must be a string of 1 to 500 characters (got "${"x".repeat(100)}…")` }] },
    { index: 2, externalId: "CHARS-EMOJI-LONG", errors: [{ field: "title", message: expect.stringMatching(/^must be a string of 1 to 500 characters \(got /) }] },
  ]);
  const stored = await srv.db.sql<{ external_id: string; title: string; chars: number }[]>`
    SELECT external_id, title, length(title)::int AS chars FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'CHARS-%' ORDER BY external_id`;
  expect([...stored]).toEqual([{ external_id: "CHARS-EMOJI", title: emoji, chars: 300 }]);
}, 30_000);

test("an external id of 200 emoji (255 characters at most) is synced, takes a stock update and is removed", async () => {
  const id = "📦".repeat(200);
  const put = await call("PUT", "catalog", { products: [product({ externalId: id, stockQuantity: 1 })] });
  expect(put.status).toBe(200);
  expect(put.body.data.rejected).toEqual([]);
  expect(put.body.data.accepted).toBe(1);

  const inv = await call("PATCH", "inventory", { items: [{ externalId: id, stockQuantity: 7 }] });
  expect(inv.status).toBe(200);
  expect(inv.body.data).toEqual({ updated: 1, products: 1, rejected: [] });

  const gone = await call("PUT", "catalog", { products: [], remove: [id] });
  expect(gone.status).toBe(200);
  expect(gone.body.data.removed).toBe(1);
  const [row] = await srv.db.sql<{ stock_quantity: number; active: boolean }[]>`SELECT stock_quantity, active FROM products WHERE store_slug = ${SLUG} AND external_id = ${id}`;
  expect(row).toEqual({ stock_quantity: 7, active: false });
}, 30_000);

test("a remove entry of 256 characters is still the request's 400 on remove.0, counted in characters", async () => {
  const r = await call("PUT", "catalog", { products: [], remove: ["📦".repeat(256)] });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "remove.0", maxLength: 255 } });
  expect(r.body.details.errors[0].message).toMatch(/^must be a string of 1 to 255 characters \(got /);
}, 30_000);
