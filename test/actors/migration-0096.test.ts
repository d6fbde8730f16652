/**
 * Migration 0096: the cart retention index reads `actor_state.expiry_ms`, a column of its own, instead of `state`
 * (0089's expression index), so an actor turn's update of its state row is HOT. The migration backfills the column of
 * the carts the rule deletes, takes its lock on actor_state a little at a time (review V1-1) and keeps an index an
 * operator built CONCURRENTLY beforehand. The turn's statement (actors/runtime/state-write.ts) writes the column only
 * when the stored one is unset, above the cart's expiry or more than EXPIRY_SLACK_MS behind it.
 */
import { expect, test } from "bun:test";
import { cartActor } from "../../actors/cart/index.ts";
import { EXPIRY_SLACK_MS, stateWriteStatement, type StateWrite } from "../../actors/runtime/state-write.ts";
import { applyMigrations, type Sql } from "../../infra/db.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { indexDefinition, migrationKit, settled } from "../helpers/migrations.ts";

const M0096 = "0096_actor_state_expiry_column.sql";
const T0 = 1_790_000_000_000;

const { cleanup, migrations, databaseBefore, pool } = migrationKit();

const databaseBefore0096 = () => databaseBefore(M0096);



const cart = (status: string, expiresAt: unknown) => ({ cart: { status, expiresAt, items: [] }, session: null, sessionSeq: 0 });

/** One turn's state statement, as the runtime sends it, with the expiry the cart definition reports for `state`. */
async function turn(sql: Pick<Sql, "unsafe">, id: string, version: number, state: ReturnType<typeof cart>): Promise<void> {
  const w: StateWrite = { kind: "cart", id, version, stateJson: JSON.stringify(state), expiry: cartActor.expiryOf!(state as never), reminders: new Map() };
  const { text, params } = stateWriteStatement(w);
  await sql.unsafe(text, params, { prepare: true });
}

test("carts written before 0096 get their expiry in the new column when the rule may delete them, rounded down; a paid or checking-out cart, an odd expiry and another kind keep none; 0089's index is gone", async () => {
  const db = await databaseBefore0096();
  const sql = db.sql;
  const rows: [string, string, unknown][] = [
    ["cart", "c-open", cart("OPEN", T0)],
    ["cart", "c-expired", cart("EXPIRED", T0 + 0.75)],
    ["cart", "c-abandoned", cart("ABANDONED", T0 + 2)],
    ["cart", "c-replaced", cart("REPLACED", T0 + 3)],
    ["cart", "c-checkout", cart("CHECKOUT", T0 + 4)],
    ["cart", "c-completed", cart("COMPLETED", T0 + 5)],
    ["cart", "c-string", cart("OPEN", String(T0))],
    ["cart", "c-huge", cart("OPEN", 1e30)],
    ["agent", "a-1", cart("OPEN", T0)],
  ];
  for (const [kind, id, state] of rows) await sql`INSERT INTO actor_state (kind, id, version, state) VALUES (${kind}, ${id}, 1, ${state as never}::jsonb)`;
  expect(await indexDefinition(db, "actor_state_cart_expiry")).toBeDefined();
  expect(await applyMigrations(sql, await migrations(M0096, true))).toEqual([M0096]);
  const got = await sql<{ kind: string; id: string; expiry_ms: string | null }[]>`SELECT kind, id, expiry_ms::text FROM actor_state ORDER BY kind, id`;
  expect(Object.fromEntries(got.map((r) => [r.id, r.expiry_ms]))).toEqual({
    "a-1": null,
    "c-abandoned": String(T0 + 2),
    "c-checkout": null,
    "c-completed": null,
    "c-expired": String(T0),
    "c-huge": "9223372036854775807",
    "c-open": String(T0),
    "c-replaced": String(T0 + 3),
    "c-string": null,
  });
  expect(await indexDefinition(db, "actor_state_cart_expiry")).toBeUndefined();
  expect(await indexDefinition(db, "actor_state_cart_expiry_ms")).toEqual({
    valid: true,
    def: "CREATE INDEX actor_state_cart_expiry_ms ON public.actor_state USING btree (expiry_ms, id) WHERE ((kind = 'cart'::text) AND (expiry_ms IS NOT NULL))",
  });
  const [{ reloptions }] = await sql<{ reloptions: string[] | null }[]>`SELECT reloptions FROM pg_class WHERE oid = 'actor_state'::regclass`;
  expect(reloptions).toEqual(["fillfactor=70"]);
  // no index of actor_state reads `state` any more
  const defs = await sql<{ def: string }[]>`SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = 'actor_state'::regclass`;
  expect(defs.map((d) => d.def).filter((d) => /\bstate\b/.test(d.replace(/actor_state\w*/g, "")))).toEqual([]);
}, 60_000);

test("a cart's turns leave the new column alone while its expiry slides by less than the slack, and go on leaving it while it checks out and is paid, so their updates are HOT; a turn past the slack or behind the column writes it", async () => {
  const db = await createTestDatabase({ migrate: true, poolSize: 2 });
  cleanup.push(() => db.drop());
  const sql = db.sql;
  const id = crypto.randomUUID();
  const stats = await sql.begin(async (tx) => {
    await turn(tx, id, 0, cart("OPEN", T0));
    // a journey's turns: the cart touched (its sliding expiry moves on by ms), checked out, paid
    let v = 1;
    for (let i = 1; i <= 10; i++) await turn(tx, id, v++, cart("OPEN", T0 + i * 1000));
    for (let i = 1; i <= 5; i++) await turn(tx, id, v++, cart("CHECKOUT", T0 + 20_000 + i));
    for (let i = 1; i <= 5; i++) await turn(tx, id, v++, cart("COMPLETED", T0 + 30_000 + i));
    const [r] = await tx<{ hot: number; upd: number; expiry_ms: string }[]>`SELECT pg_stat_get_xact_tuples_hot_updated('actor_state'::regclass)::int AS hot,
      pg_stat_get_xact_tuples_updated('actor_state'::regclass)::int AS upd, (SELECT expiry_ms::text FROM actor_state WHERE kind = 'cart' AND id = ${id}) AS expiry_ms`;
    return r!;
  });
  expect(stats.upd).toBe(20);
  // none of the 20 with 0089's index, which read `state`; a page with no room left for the new version can still make one non-HOT
  expect(stats.hot).toBeGreaterThanOrEqual(18);
  expect(stats.expiry_ms).toBe(String(T0));

  const expiryOf = async () => (await sql<{ e: string | null }[]>`SELECT expiry_ms::text AS e FROM actor_state WHERE kind = 'cart' AND id = ${id}`)[0]!.e;
  // opened again after the payment (a declined leg's cart is OPEN), more than the slack later: written
  await turn(sql, id, 21, cart("OPEN", T0 + EXPIRY_SLACK_MS + 1));
  expect(await expiryOf()).toBe(String(T0 + EXPIRY_SLACK_MS + 1));
  // an expiry before the stored one (a host whose clock is behind): written, the column stays a lower bound
  await turn(sql, id, 22, cart("OPEN", T0 + 5));
  expect(await expiryOf()).toBe(String(T0 + 5));
  // a column a retention run cleared (the cart was paid then) is written by the next turn that opens the cart
  await sql`UPDATE actor_state SET expiry_ms = NULL WHERE kind = 'cart' AND id = ${id}`;
  await turn(sql, id, 23, cart("CHECKOUT", T0 + 6));
  expect(await expiryOf()).toBeNull();
  await turn(sql, id, 24, cart("OPEN", T0 + 7));
  expect(await expiryOf()).toBe(String(T0 + 7));
}, 60_000);

test("while an actor write holds actor_state, 0096 waits a little at a time so other actor writes go on; past the connection's lock_timeout it fails with lock_not_available, changes nothing, and applies once the write ended", async () => {
  const db = await databaseBefore0096();
  await db.sql`INSERT INTO actor_state (kind, id, version, state) VALUES ('cart', 'c-1', 1, ${cart("OPEN", T0) as never}::jsonb), ('cart', 'c-2', 1, ${cart("OPEN", T0) as never}::jsonb)`;
  await db.sql.unsafe(`ALTER DATABASE ${db.name} SET lock_timeout = '2s'`);
  const boot = pool(db, 2);
  const long = (await pool(db).reserve()) as unknown as Sql;
  await long`BEGIN`;
  await long`UPDATE actor_state SET version = version + 1 WHERE kind = 'cart' AND id = 'c-1'`;
  const started = Date.now();
  const migrating = settled(applyMigrations(boot, await migrations(M0096, true)));
  const writer = pool(db);
  let slowest = 0;
  let writes = 0;
  while (Date.now() - started < 1_800) {
    const t0 = Date.now();
    await writer`UPDATE actor_state SET version = version + 1 WHERE kind = 'cart' AND id = 'c-2'`;
    slowest = Math.max(slowest, Date.now() - t0);
    writes++;
  }
  const failed = await migrating;
  expect(Date.now() - started).toBeLessThan(6_000);
  expect(failed.ok ? "" : failed.message).toBe(
    `migration ${M0096} failed: could not lock actor_state within 00:00:02; hint: A long transaction holds actor_state (pg_stat_activity, pg_locks); start again once it ended.`,
  );
  expect(writes).toBeGreaterThan(3);
  expect(slowest).toBeLessThan(1_000);
  const columns = await db.sql`SELECT 1 FROM information_schema.columns WHERE table_name = 'actor_state' AND column_name = 'expiry_ms'`;
  expect(columns.length).toBe(0);
  await long`COMMIT`;
  expect(await applyMigrations(boot, await migrations(M0096, true))).toEqual([M0096]);
  expect(await indexDefinition(db, "actor_state_cart_expiry_ms")).toMatchObject({ valid: true });
}, 30_000);

test("with the column filled and the index built CONCURRENTLY beforehand, 0096 keeps the index, fills only the carts written since and drops 0089's", async () => {
  const db = await databaseBefore0096();
  const sql = db.sql;
  await sql`INSERT INTO actor_state (kind, id, version, state) VALUES ('cart', 'c-before', 1, ${cart("OPEN", T0) as never}::jsonb)`;
  await sql`ALTER TABLE actor_state ADD COLUMN IF NOT EXISTS expiry_ms bigint`;
  await sql`UPDATE actor_state SET expiry_ms = T.e FROM (VALUES (${T0 - 1}::int8)) T(e) WHERE kind = 'cart' AND id = 'c-before'`;
  await sql.unsafe(`CREATE INDEX CONCURRENTLY actor_state_cart_expiry_ms ON actor_state (expiry_ms, id) WHERE kind = 'cart' AND expiry_ms IS NOT NULL`);
  const before = await indexDefinition(db, "actor_state_cart_expiry_ms");
  // a cart a host still running the previous code wrote after the operator's backfill
  await sql`INSERT INTO actor_state (kind, id, version, state) VALUES ('cart', 'c-since', 1, ${cart("ABANDONED", T0 + 9) as never}::jsonb)`;
  expect(await applyMigrations(pool(db, 2), await migrations(M0096, true))).toEqual([M0096]);
  expect(await indexDefinition(db, "actor_state_cart_expiry_ms")).toEqual(before!);
  expect(await indexDefinition(db, "actor_state_cart_expiry")).toBeUndefined();
  const got = await sql<{ id: string; e: string }[]>`SELECT id, expiry_ms::text AS e FROM actor_state ORDER BY id`;
  expect(got.map((r) => [r.id, r.e])).toEqual([
    ["c-before", String(T0 - 1)],
    ["c-since", String(T0 + 9)],
  ]);
}, 30_000);
