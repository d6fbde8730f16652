import { afterAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { applyMigrations, connect } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase | undefined;
afterAll(async () => {
  await db?.drop();
});

test("migrations are applied once each when two processes start at once", async () => {
  db = await createTestDatabase({ migrate: false });
  const other = connect(db.url, 2);
  const [a, b] = await Promise.all([applyMigrations(db.sql), applyMigrations(other)]);
  await other.end();
  const files = readdirSync(new URL("../../infra/migrations", import.meta.url)).filter((f) => /^\d{4}_.+\.sql$/.test(f));
  expect(a.length + b.length).toBe(files.length);
  const rows = await db.sql`SELECT name FROM schema_migrations`;
  expect(rows.length).toBe(files.length);
  expect(await applyMigrations(db.sql)).toEqual([]);
});
