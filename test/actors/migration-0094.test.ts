/**
 * Migration 0094: the partial index oauth_codes_document_client (metadata-document clients' authorization codes by
 * client and creation), which the operator's OAuth client listing walks (gateway/oauth/admin.ts; its plan is asserted
 * in test/http/oauth-operator-listing-cost.test.ts). An operator may build it CONCURRENTLY first: the migration then
 * keeps that index; a CONCURRENTLY build that failed leaves an invalid index of that name, which the migration makes
 * again instead of taking it for done (IF NOT EXISTS alone would).
 */
import { expect, test } from "bun:test";
import { applyMigrations } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { cleanupAfterEach, migrationsBefore } from "../helpers/migrations.ts";

const M0094 = "0094_oauth_codes_document_client.sql";
const DEFINITION =
  "CREATE INDEX oauth_codes_document_client ON public.oauth_codes USING btree (client_id, created_at) WHERE ((client_id ~~ 'https://%'::text) OR (client_id ~~ 'http://%'::text))";

const cleanup = cleanupAfterEach();

async function databaseBefore0094(): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false, poolSize: 2 });
  cleanup.push(() => db.drop());
  await applyMigrations(db.sql, await migrationsBefore(M0094, cleanup));
  return db;
}

const index = async (db: TestDatabase) =>
  (await db.sql<{ oid: number; def: string; valid: boolean }[]>`
    SELECT i.indexrelid::int AS oid, pg_get_indexdef(i.indexrelid) AS def, i.indisvalid AS valid FROM pg_index i
    WHERE i.indexrelid = to_regclass('oauth_codes_document_client')`)[0];

test("0094 builds the index with its definition", async () => {
  const db = await databaseBefore0094();
  expect(await applyMigrations(db.sql, await migrationsBefore(M0094, cleanup, true))).toEqual([M0094]);
  expect(await index(db)).toMatchObject({ def: DEFINITION, valid: true });
});

test("an index an operator built CONCURRENTLY beforehand is kept; one whose CONCURRENTLY build failed is made again", async () => {
  const kept = await databaseBefore0094();
  await kept.sql.unsafe(DEFINITION.replace("CREATE INDEX", "CREATE INDEX CONCURRENTLY"));
  const before = await index(kept);
  expect(await applyMigrations(kept.sql, await migrationsBefore(M0094, cleanup, true))).toEqual([M0094]);
  expect(await index(kept)).toEqual(before!);

  const failed = await databaseBefore0094();
  const [user] = await failed.sql<{ id: string }[]>`INSERT INTO users (email, password_hash, role) VALUES ('m@example.test', 'x', 'merchant') RETURNING id`;
  await failed.sql`INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scopes, resource, family_id, expires_at)
                   VALUES (${"a".repeat(64)}, 'https', ${user!.id}::uuid, 'http://127.0.0.1/cb', ${"a".repeat(43)}, ARRAY['search'], 'http://x/mcp', gen_random_uuid(), now())`;
  // a build that fails on a row (division by zero) leaves an invalid index of that name behind
  const broken = await failed.sql
    .unsafe(`CREATE INDEX CONCURRENTLY oauth_codes_document_client ON oauth_codes ((1 / (length(client_id) - 5)))`)
    .then(() => "built", (err: { code?: string }) => err.code);
  expect(broken).toBe("22012");
  expect(await index(failed)).toMatchObject({ valid: false });
  expect(await applyMigrations(failed.sql, await migrationsBefore(M0094, cleanup, true))).toEqual([M0094]);
  expect(await index(failed)).toMatchObject({ def: DEFINITION, valid: true });
});
