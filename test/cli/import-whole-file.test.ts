/**
 * `bun run cli import` reads the file line by line and its result does not depend on --batch (audit A2 LOW-2): a
 * line repeating the externalId of an earlier line the API accepted is refused whichever batch it falls in, a line
 * after a rejected one with its externalId (the merchant's correction) is imported as PUT /catalog does in one batch
 * (review R5-1), and an item the API rejects (here a lone surrogate, audit A2 MED-3) does not stop the lines after it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { repeatMessage } from "../../actors/store/import-file.ts";
import { readLines } from "../../infra/cli.ts";
import { merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const ROOT = resolve(import.meta.dir, "../..");

const srv = useServer({ seed: true });
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-cli-a2-"));
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function runImport(file: string, batch: number) {
  const owner = merchantLogin(SLUG);
  const proc = Bun.spawn(["bun", "run", "cli", "import", SLUG, file, "--batch", String(batch)], {
    cwd: ROOT,
    env: { ...process.env, ACS_URL: srv.url, ACS_EMAIL: owner.email, ACS_PASSWORD: owner.password },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, out, err };
}

test("a repeated externalId is refused across the whole file with any --batch, and a bad line does not stop the rest", async () => {
  for (const batch of [1, 2, 1000]) {
    const tag = `CLI-A2-B${batch}`;
    const file = join(dir, `dup-${batch}.jsonl`);
    await writeFile(
      file,
      [
        JSON.stringify({ externalId: `${tag}-1`, title: "CLI one", price: 5, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-2`, title: "CLI two", price: 7, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-1`, title: "CLI one AGAIN", price: 6, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-3`, title: "Broken \ud800 title", price: 8, currency: "USD" }),
        JSON.stringify({ externalId: `${tag}-4`, title: "CLI four", price: 9, currency: "USD" }),
      ].join("\r\n"),
    );
    const r = await runImport(file, batch);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`imported 3 of 5 lines into ${SLUG} (2 rejected, 0 not JSON)`);
    expect(r.err).toContain(`rejected line 3 (${tag}-1): externalId ${repeatMessage(1)}`);
    expect(r.err).toMatch(new RegExp(`rejected line 4 \\(${tag}-3\\): title `));
    const rows = await srv.db.sql<{ external_id: string; title: string; price_minor: number }[]>`
      SELECT external_id, title, price_minor FROM products WHERE store_slug = ${SLUG} AND external_id LIKE ${tag + "-%"} ORDER BY 1`;
    expect(rows.map((x) => [x.external_id, x.title, Number(x.price_minor)])).toEqual([
      [`${tag}-1`, "CLI one", 500],
      [`${tag}-2`, "CLI two", 700],
      [`${tag}-4`, "CLI four", 900],
    ]);
    const [h] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM product_price_history h JOIN products p ON p.id = h.product_id
      WHERE p.external_id = ${tag + "-1"}`;
    expect(h!.n).toBe(1);
  }
}, 120_000);

test("a corrected line after a line the API rejected is imported with any --batch, as PUT /catalog does in one batch; a correction after an accepted line is refused saying so", async () => {
  const owner = await srv.json("/api/v1/auth/login", { method: "POST", body: merchantLogin(SLUG) });
  const auth = { authorization: `Bearer ${owner.body.data.token}` };
  const fileLines = (tag: string) => [
    { externalId: `${tag}-FIX`, title: "Lamp", price: 5.999, currency: "USD" }, // 1: three decimals, rejected
    { externalId: `${tag}-OK`, title: "Vase", price: 3, currency: "USD" }, // 2: accepted
    { externalId: `${tag}-FIX`, title: "Lamp", price: 5.99, currency: "USD" }, // 3: the correction
    { externalId: `${tag}-OK`, title: "Vase", price: 4, currency: "USD" }, // 4: a correction of an accepted line
  ];
  // the API with the whole file as one batch: the reference
  const api = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: auth, body: { products: fileLines("CLI-R5-API") } });
  expect(api.status).toBe(200);
  expect(api.body.data.upserted.map((u: { index: number }) => u.index)).toEqual([1, 2]);
  expect(api.body.data.rejected.map((x: { index: number }) => x.index)).toEqual([0, 3]);
  for (const batch of [1, 2, 1000]) {
    const tag = `CLI-R5-B${batch}`;
    const file = join(dir, `fix-${batch}.jsonl`);
    await writeFile(file, fileLines(tag).map((l) => JSON.stringify(l)).join("\n"));
    const r = await runImport(file, batch);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`imported 2 of 4 lines into ${SLUG} (2 rejected, 0 not JSON)`);
    expect(r.err).toMatch(new RegExp(`rejected line 1 \\(${tag}-FIX\\): price `));
    expect(r.err).toContain(`rejected line 4 (${tag}-OK): externalId repeated in this file (imported from line 2; a later line does not replace it, correct line 2 instead)`);
    expect(r.err).not.toContain(`rejected line 3`);
    const rows = await srv.db.sql<{ external_id: string; price_minor: number }[]>`
      SELECT external_id, price_minor FROM products WHERE store_slug = ${SLUG} AND external_id LIKE ${tag + "-%"} ORDER BY 1`;
    expect(rows.map((x) => [x.external_id, Number(x.price_minor)])).toEqual([
      [`${tag}-FIX`, 599],
      [`${tag}-OK`, 300],
    ]);
  }
}, 120_000);

test("lines are read in chunks with their numbers: CRLF, blank lines, lines across chunk boundaries and no final newline", async () => {
  const file = join(dir, "lines.txt");
  const long = "x".repeat(200_000); // longer than a read chunk
  await writeFile(file, `a\r\n\nb\n${long}\nlast`);
  const got: [number, string][] = [];
  for await (const l of readLines(file)) got.push([l.line, l.text.length > 20 ? `len ${l.text.length}` : l.text]);
  expect(got).toEqual([[1, "a"], [2, ""], [3, "b"], [4, "len 200000"], [5, "last"]]);
});
