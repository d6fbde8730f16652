import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { productFromRow, type ProductRow } from "../../actors/store/schemas.ts";
import { createScratchDatabase, type ScratchDatabase } from "../../infra/seed/scratch-db.ts";
import { arrayLiteral, escapeCopy } from "../../infra/seed/copy.ts";
import { progressLine, seedSynthetic, syntheticSlug } from "../../infra/seed/synthetic.ts";
import { stableUuid } from "../../infra/seed/prng.ts";

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe("the synthetic catalog seed", () => {
  test("it inserts exactly the requested products spread over the requested merchants", async () => {
    const progress: number[] = [];
    const result = await seedSynthetic(db.sql, { products: 2500, merchants: 3, batchSize: 1000, onProgress: (done) => progress.push(done) });
    expect(result).toMatchObject({ merchants: 3, products: 2500 });
    expect(result.productsPerSecond).toBeGreaterThan(0);
    expect(progress).toEqual([1000, 2000, 2500]);
    const rows = await db.sql<{ store_slug: string; n: number }[]>`SELECT store_slug, count(*)::int AS n FROM products GROUP BY 1 ORDER BY 1`;
    expect(rows.map((r) => [r.store_slug, r.n])).toEqual([[syntheticSlug(0), 834], [syntheticSlug(1), 834], [syntheticSlug(2), 832]]);
  });

  test("rows streamed with COPY read back intact, ids derived from the seed", async () => {
    const [row] = await db.sql<ProductRow[]>`SELECT * FROM products WHERE external_id = 'SYN-00000001'`;
    const p = productFromRow(row!);
    expect(p.id).toBe(stableUuid("synthetic:42", "product", syntheticSlug(0), "SYN-00000001"));
    expect(p.title.length).toBeGreaterThan(5);
    expect(Array.isArray(p.variants)).toBe(true);
    expect(typeof p.attributes).toBe("object");
    expect(p.priceMinor).toBeGreaterThan(0);
    const [withVariants] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE jsonb_array_length(variants) > 0`;
    expect(withVariants!.n).toBeGreaterThan(100);
  });

  test("running it again inserts nothing new", async () => {
    await seedSynthetic(db.sql, { products: 2500, merchants: 3 });
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products`;
    expect(row!.n).toBe(2500);
  });

  test("COPY text escaping keeps tabs, newlines, quotes and backslashes", () => {
    expect(escapeCopy("a\tb\nc\\d")).toBe("a\\tb\\nc\\\\d");
    expect(arrayLiteral(['x"y', "a,b", null])).toBe('{"x\\"y","a,b",NULL}');
  });

  test("the progress line shows ratio, counts and rate", () => {
    expect(progressLine(50, 100, 2, 10)).toBe("[#####-----]  50%  50/100  25/s  ETA 2s");
  });
});
