/**
 * The dashboard's JSONL upload sends the file to the store actor in batches of 1,000 lines, and the actor only sees
 * repeats inside one batch. A line repeating an earlier line's externalId in a later batch used to overwrite it, so
 * the product stored depended on where the batch boundary fell. The upload now follows the CLI import's rule
 * (actors/store/import-file.ts): the first line the store accepts with an externalId is the one stored, and every
 * later line with the same externalId is refused with that line's number, in the same batch or a later one; a line
 * the store rejected claims nothing, so a correction after it is stored (review R5-1). Logs in and posts the form
 * with its CSRF token, against the real server.
 */
import { expect, test } from "bun:test";
import { repeatMessage } from "../../actors/store/import-file.ts";
import { MAX_CATALOG_BATCH } from "../../actors/store/ingest.ts";
import { dashboardSession as openSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

const dashboardSession = () => openSession(srv, STORE);

const product = (externalId: string, title: string, price: number) => JSON.stringify({ externalId, title, price, currency: "USD" });

async function upload(lines: string[]) {
  const s = await dashboardSession();
  const fd = new FormData();
  fd.append("_csrf", s.csrf);
  fd.append("file", new File([lines.join("\n")], "repeats.jsonl", { type: "application/x-ndjson" }));
  const r = await srv.fetch(`/dashboard/s/${STORE}/catalog/upload`, { method: "POST", headers: { cookie: s.cookie }, body: fd });
  expect(r.status).toBe(200);
  const page = await r.text();
  const rejectedRows = [...page.matchAll(/<tr><td data-label="Line">(\d+)<\/td><td data-label="External id">([^<]*)<\/td><td data-label="Errors">([^<]*)<\/td><\/tr>/g)].map((m) => m.slice(1));
  return { status: /<p role="status">(.*?)<\/p>/.exec(page)?.[1], rejectedRows };
}

test("a repeated externalId is refused on every later line, in the same batch or a later one, and the first line is the one stored", async () => {
  const lines = [
    product("REP-1", "Lamp as first listed", 10), // line 1
    product("REP-2", "Vase as first listed", 20), // line 2
    product("REP-2", "Vase listed again in the same batch", 21), // line 3: same batch
  ];
  while (lines.length < MAX_CATALOG_BATCH) lines.push(product(`REP-FILL-${lines.length + 1}`, `Filler ${lines.length + 1}`, 1));
  lines.push(product("REP-1", "Lamp listed again in the next batch", 99)); // line 1001: the second batch
  lines.push(product("REP-AFTER", "Bowl after the repeats", 5)); // line 1002
  const r = await upload(lines);
  expect(r.status).toBe(`${MAX_CATALOG_BATCH + 2} lines read: <strong>${MAX_CATALOG_BATCH} accepted</strong>, <strong>2 rejected</strong>.`);
  expect(r.rejectedRows).toEqual([
    ["3", "REP-2", `externalId: ${repeatMessage(2)}`],
    [String(MAX_CATALOG_BATCH + 1), "REP-1", `externalId: ${repeatMessage(1)}`],
  ]);
  const stored = await srv.db.sql<{ external_id: string; title: string; price_minor: number }[]>`
    SELECT external_id, title, price_minor::int AS price_minor FROM products
    WHERE store_slug = ${STORE} AND external_id IN ('REP-1', 'REP-2', 'REP-AFTER') ORDER BY external_id`;
  expect([...stored]).toEqual([
    { external_id: "REP-1", title: "Lamp as first listed", price_minor: 1000 },
    { external_id: "REP-2", title: "Vase as first listed", price_minor: 2000 },
    { external_id: "REP-AFTER", title: "Bowl after the repeats", price_minor: 500 },
  ]);
}, 120_000);

test("a correction after a line the store rejected is stored, in the same batch or the next one; a line after an accepted one is refused naming it", async () => {
  const lines = [
    product("FIX-1", "Lamp with three decimals", 5.999), // line 1: rejected (price)
    product("FIX-1", "Lamp corrected in the same batch", 5.99), // line 2: stored
    product("FIX-2", "Vase with three decimals", 1.001), // line 3: rejected (price)
  ];
  while (lines.length < MAX_CATALOG_BATCH) lines.push(product(`FIX-FILL-${lines.length + 1}`, `Filler ${lines.length + 1}`, 1));
  lines.push(product("FIX-2", "Vase corrected in the next batch", 1)); // line 1001: stored
  lines.push(product("FIX-1", "Lamp appended again", 7)); // line 1002: line 2 was stored
  const r = await upload(lines);
  expect(r.status).toBe(`${MAX_CATALOG_BATCH + 2} lines read: <strong>${MAX_CATALOG_BATCH - 1} accepted</strong>, <strong>3 rejected</strong>.`);
  expect(r.rejectedRows.map(([line, id, errors]) => [line, id, errors!.split(":")[0]])).toEqual([
    ["1", "FIX-1", "price"],
    ["3", "FIX-2", "price"],
    [String(MAX_CATALOG_BATCH + 2), "FIX-1", "externalId"],
  ]);
  expect(r.rejectedRows[2]![2]).toBe("externalId: repeated in this file (imported from line 2; a later line does not replace it, correct line 2 instead)");
  const stored = await srv.db.sql<{ external_id: string; title: string; price_minor: number }[]>`
    SELECT external_id, title, price_minor::int AS price_minor FROM products
    WHERE store_slug = ${STORE} AND external_id IN ('FIX-1', 'FIX-2') ORDER BY external_id`;
  expect([...stored]).toEqual([
    { external_id: "FIX-1", title: "Lamp corrected in the same batch", price_minor: 599 },
    { external_id: "FIX-2", title: "Vase corrected in the next batch", price_minor: 100 },
  ]);
}, 120_000);
