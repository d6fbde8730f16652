/**
 * Helper F (session 20): a catalog line with a price past what a double can scale to minor units (1e308 USD) was
 * refused as "price: more decimals than USD has (2)": the money check (`amountProblem`, actors/store/ingest.ts) asked
 * about decimals first, and a scaled value of Infinity fails that question. It is refused as above the maximum amount,
 * as 1e15 is; the other lines of the file are imported.
 */
import { expect, test } from "bun:test";
import { dashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

test("a price too large to scale to cents is refused as above the maximum amount, not for its decimals", async () => {
  const s = await dashboardSession(srv, STORE);
  const lines = [
    '{"externalId":"HUGE-1","title":"Huge","price":1e308,"currency":"USD"}',
    '{"externalId":"HUGE-2","title":"Huge","price":-1e308,"currency":"USD"}',
    JSON.stringify({ externalId: "FINE-1", title: "Fine", price: 12.5, currency: "USD" }),
  ];
  const fd = new FormData();
  fd.append("_csrf", s.csrf);
  fd.append("file", new File([lines.join("\n")], "huge.jsonl"));
  const r = await srv.fetch(`/dashboard/s/${STORE}/catalog/upload`, { method: "POST", headers: { cookie: s.cookie }, body: fd });
  expect(r.status).toBe(200);
  const page = await r.text();
  expect(page).toContain("1 accepted");
  expect(page).not.toContain("more decimals");
  expect(page).toMatch(/<td data-label="Line">1<\/td>[\s\S]*?price: above the maximum amount/);
}, 60_000);
