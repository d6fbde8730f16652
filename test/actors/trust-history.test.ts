import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`INSERT INTO stores (slug, name, country) VALUES ('history-shop', 'History Shop', 'US')`;
  await db.sql`INSERT INTO trust_score_history (store_slug, computed_at, score_0to1, score_0to100, engine, v41_score_0to100, v41_tier,
                 v2_score_0to1, operational_status, verified_evidence, trigger)
               VALUES ('history-shop', now(), 0.42, 42, 'v41', 42, 'cold_start', 0.5, 'deprioritized', 3, 'refresh')`;
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

describe("the trust score history is append-only in the database", () => {
  test("an UPDATE of a history row is refused", async () => {
    const err = await db.sql`UPDATE trust_score_history SET score_0to1 = 0.99 WHERE store_slug = 'history-shop'`.catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toContain("trust_score_history is append-only (UPDATE refused)");
    const [row] = await db.sql`SELECT score_0to1 FROM trust_score_history WHERE store_slug = 'history-shop'`;
    expect(Number(row.score_0to1)).toBe(0.42);
  });

  test("a DELETE of a history row is refused", async () => {
    const err = await db.sql`DELETE FROM trust_score_history WHERE store_slug = 'history-shop'`.catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toContain("trust_score_history is append-only (DELETE refused)");
    expect((await db.sql`SELECT id FROM trust_score_history`).length).toBe(1);
  });

  test("a TRUNCATE is refused too", async () => {
    const err = await db.sql`TRUNCATE trust_score_history`.catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toContain("append-only (TRUNCATE refused)");
  });

  test("appending a new row still works", async () => {
    await db.sql`INSERT INTO trust_score_history (store_slug, computed_at, score_0to1, score_0to100, engine, v41_tier, v2_score_0to1,
                   operational_status, trigger)
                 VALUES ('history-shop', now(), 0.45, 45, 'v2', 'insufficient_data', 0.45, 'deprioritized', 'operator')`;
    expect((await db.sql`SELECT id FROM trust_score_history`).length).toBe(2);
  });
});

describe("the GS1 check digit used by the data-consistency signal", () => {
  test("accepts valid GTIN-8/12/13/14 and refuses a wrong check digit or length", async () => {
    const cases: [string, boolean][] = [
      ["4006381333931", true], // GTIN-13
      ["4006381333932", false],
      ["036000291452", true], // UPC-A
      ["036000291453", false],
      ["96385074", true], // GTIN-8
      ["10012345678902", true], // GTIN-14
      ["1234567890", false], // 10 digits is no GTIN
    ];
    for (const [gtin, ok] of cases) {
      const [r] = await db.sql`SELECT gtin_check_digit_ok(${gtin}) AS ok`;
      expect([gtin, r.ok]).toEqual([gtin, ok]);
    }
  });
});
