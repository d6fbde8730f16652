/**
 * The dashboard's JSONL upload parses each line itself, so the global body bounds (plugins/json-depth.ts) never saw
 * it (review H, finding 4): a line nested 100,000 levels deep was a 500 (stack overflow copying it to the store
 * actor), and one with 10,000-level attributes was stored (PUT /catalog refuses past 64) and served to agents. Each
 * line now gets the same bounds and is rejected like any other invalid line; the rest of the file is ingested.
 */
import { expect, test } from "bun:test";
import { MAX_JSON_ARRAY_ITEMS, MAX_JSON_DEPTH } from "../../gateway/plugins/json-depth.ts";
import { dashboardSession as openSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

const nested = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);

const dashboardSession = () => openSession(srv, STORE);

test("lines past the nesting or width bound are rejected with the bound; the other lines are ingested", async () => {
  const s = await dashboardSession();
  const lines = [
    `{"externalId":"DEEP-1","title":"Deep attributes","price":1,"currency":"USD","attributes":${nested(10_000)}}`,
    nested(100_000),
    `{"externalId":"WIDE-1","title":"Wide tags","price":1,"currency":"USD","tags":[${Array(MAX_JSON_ARRAY_ITEMS + 1).fill('"t"').join(",")}]}`,
    JSON.stringify({ externalId: "OK-1", title: "A fine lamp", price: 2.5, currency: "USD", attributes: { color: "red" } }),
  ];
  const fd = new FormData();
  fd.append("_csrf", s.csrf);
  fd.append("file", new File([lines.join("\n")], "bounds.jsonl", { type: "application/x-ndjson" }));
  const r = await srv.fetch(`/dashboard/s/${STORE}/catalog/upload`, { method: "POST", headers: { cookie: s.cookie }, body: fd });
  expect(r.status).toBe(200);
  const page = await r.text();
  expect(page).toContain("4 lines read");
  expect(page).toContain("1 accepted");
  for (const line of [1, 2]) expect(page).toMatch(new RegExp(`<td data-label="Line">${line}</td>[\\s\\S]*?more than ${MAX_JSON_DEPTH} levels deep`));
  expect(page).toMatch(new RegExp(`<td data-label="Line">3</td>[\\s\\S]*?more than ${MAX_JSON_ARRAY_ITEMS} items`));
  const stored = await srv.db.sql<{ external_id: string }[]>`
    SELECT external_id FROM products WHERE store_slug = ${STORE} AND external_id IN ('DEEP-1', 'WIDE-1', 'OK-1') ORDER BY external_id`;
  expect(stored.map((p) => p.external_id)).toEqual(["OK-1"]);
}, 60_000);
