/**
 * The operator's OAuth client listing (GET /api/v1/admin/oauth/clients, gateway/oauth/admin.ts
 * `listClientsForOperator`) dates each metadata-document client by its first and last authorization code. It used to
 * aggregate every row of oauth_codes, registered clients' codes included (review, session 13 "Known and left": ~130 ms
 * at 100,000 codes), so its cost grew with every consent of every user. It now walks oauth_codes_document_client
 * (migration 0094) one client at a time: a probe per metadata-document client, however many codes each holds, and
 * never a registered client's code; past WALKED_CLIENTS_MAX such clients (many clients, few codes each) it aggregates
 * that index instead. The answer is the one the aggregate over every code gave.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { listClientsForOperator, WALKED_CLIENTS_MAX, type AdminClientsFilter } from "../../gateway/oauth/admin.ts";
import type { Services } from "../../gateway/services.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;
/** The statements the listing sent, as sent (text and parameters), to EXPLAIN them. */
const sent: { text: string; params: unknown[] }[] = [];
let watched: postgres.Sql<{}>;
let svc: Services;

const BUSY = "https://busy.example/client.json";
const ONCE = "https://once.example/client.json";
const BLOCKED_ONLY = "https://blocked-only.example/client.json";
const PLAIN_HTTP = "http://127.0.0.1:7777/client.json";
/** Codes of the registered clients (7,000 each) and of the busy metadata-document client: far more than the listing needs. */
const REGISTERED_CODES = 21_000;
const BUSY_CODES = 3_000;

beforeAll(async () => {
  db = await createTestDatabase();
  const sql = db.sql;
  const [user] = await sql<{ id: string }[]>`INSERT INTO users (email, password_hash, role) VALUES ('lister@example.test', 'x', 'operator') RETURNING id`;
  const uid = user!.id;
  await sql`INSERT INTO oauth_clients (client_id, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope, owner_user_id, created_at)
            SELECT 'mcpc_listing' || g, 'registered ' || g, ARRAY['http://127.0.0.1/cb'], ARRAY['authorization_code'], 'none', 'search', ${uid}::uuid,
                   now() - make_interval(days => 30 - g)
            FROM generate_series(1, 3) g`;
  const codes = (client: string, n: number, firstDaysAgo: number) => sql`
    INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scopes, resource, family_id, expires_at, created_at)
    SELECT md5(${client} || g) || md5(g || ${client}), ${client}, ${uid}::uuid, 'http://127.0.0.1/cb', repeat('a', 43), ARRAY['search'],
           'http://x/mcp', gen_random_uuid(), now(), now() - make_interval(days => ${firstDaysAgo}) + make_interval(secs => g)
    FROM generate_series(1, ${n}::int) g`;
  for (let i = 1; i <= 3; i++) await codes(`mcpc_listing${i}`, REGISTERED_CODES / 3, 20);
  await codes(BUSY, BUSY_CODES, 10);
  await codes(ONCE, 1, 5);
  await codes(PLAIN_HTTP, 2, 8);
  await sql`INSERT INTO oauth_blocked_clients (client_id, blocked_by, blocked_at) VALUES
            (${BLOCKED_ONLY}, ${uid}::uuid, now() - interval '2 days'), (${PLAIN_HTTP}, ${uid}::uuid, now() - interval '1 day')`;
  await sql`ANALYZE oauth_codes`;
  watched = postgres(db.url, { max: 1, onnotice: () => {}, debug: (_c, text, params) => void sent.push({ text, params: params as unknown[] }) });
  svc = { sql: watched, log: { info() {} } } as unknown as Services;
}, 120_000);
afterAll(async () => {
  await watched?.end({ timeout: 2 });
  await db?.drop();
});

/** What the aggregate over every code answered: each URL client's first and last code. */
async function aggregated(): Promise<Map<string, { first: string; last: string }>> {
  const rows = await db.sql<{ client_id: string; first: Date; last: Date }[]>`
    SELECT client_id, min(created_at) AS first, max(created_at) AS last FROM oauth_codes WHERE client_id LIKE 'http%' GROUP BY client_id`;
  return new Map(rows.map((r) => [r.client_id, { first: r.first.toISOString(), last: r.last.toISOString() }]));
}

/** The listing, and the plan of its page statement (EXPLAIN ANALYZE of exactly what it sent). */
async function listed(filter: AdminClientsFilter) {
  sent.length = 0;
  const page = await listClientsForOperator(svc, filter);
  const statement = sent.find((s) => s.text.includes("WITH listed"));
  expect(statement).toBeDefined();
  const plan = (await db.sql.unsafe(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${statement!.text}`, statement!.params as never[]))
    .map((r) => (r as Record<string, string>)["QUERY PLAN"])
    .join("\n");
  return { page, plan };
}

/** Every plan node that read oauth_codes, with the rows it returned per loop. */
function codeReads(plan: string): { node: string; rows: number; loops: number }[] {
  return plan
    .split("\n")
    .filter((l) => / on oauth_codes\b/.test(l) && !l.includes("(never executed)"))
    .map((l) => {
      const m = /actual rows=(\d+) loops=(\d+)/.exec(l);
      return { node: l.trim(), rows: Number(m?.[1]), loops: Number(m?.[2]) };
    });
}

test("each metadata-document client is dated by its first and last code, as the aggregate over every code did", async () => {
  const { page } = await listed({ limit: 200 });
  const codes = await aggregated();
  expect(page.total).toBe(3 + 4);
  const documents = page.items.filter((i) => i.kind === "metadata_document");
  const view = Object.fromEntries(documents.map((d) => [d.clientId, { createdAt: d.createdAt, lastUsedAt: d.lastUsedAt, blocked: d.blockedAt !== null }]));
  const blockedAt = Object.fromEntries(documents.map((d) => [d.clientId, d.blockedAt]));
  expect(view).toEqual({
    [BUSY]: { createdAt: codes.get(BUSY)!.first, lastUsedAt: codes.get(BUSY)!.last, blocked: false },
    [ONCE]: { createdAt: codes.get(ONCE)!.first, lastUsedAt: codes.get(ONCE)!.first, blocked: false },
    // blocked after its first consent: dated by that consent
    [PLAIN_HTTP]: { createdAt: codes.get(PLAIN_HTTP)!.first, lastUsedAt: codes.get(PLAIN_HTTP)!.last, blocked: true },
    // no consent on record: dated by its block, never used
    [BLOCKED_ONLY]: { createdAt: blockedAt[BLOCKED_ONLY]!, lastUsedAt: null, blocked: true },
  });
  // oldest first, registered and metadata-document clients in one order
  const order = page.items.map((i) => i.createdAt);
  expect(order).toEqual([...order].sort());
  expect(page.items.filter((i) => i.kind === "registered").map((i) => i.lastUsedAt)).toEqual([null, null, null]);
});

test("the filters answer from the same walk: one client by id, only blocked ones, a page of one", async () => {
  const codes = await aggregated();
  const one = (await listed({ client_id: BUSY })).page;
  expect(one.total).toBe(1);
  expect(one.items.map((i) => [i.clientId, i.createdAt, i.lastUsedAt])).toEqual([[BUSY, codes.get(BUSY)!.first, codes.get(BUSY)!.last]]);
  const blocked = (await listed({ blocked: "true" })).page;
  expect(blocked.items.map((i) => i.clientId).sort()).toEqual([BLOCKED_ONLY, PLAIN_HTTP].sort());
  expect(blocked.total).toBe(2);
  const registered = (await listed({ kind: "registered" })).page;
  expect(registered.total).toBe(3);
  const second = (await listed({ limit: 1, offset: 1 })).page;
  expect({ n: second.items.length, total: second.total }).toEqual({ n: 1, total: 7 });
});

test("the page reads one code per probe: never a registered client's codes, nor every code of a busy client", async () => {
  const { plan } = await listed({ limit: 50 });
  // every node that ran over oauth_codes is a probe of the URL clients' index (no scan of the table, no bitmap of it)
  const reads = codeReads(plan);
  expect(reads.length).toBeGreaterThan(0);
  for (const r of reads) {
    expect(r.node).toContain("oauth_codes_document_client");
    // a probe returns one code (or none past the last client), whatever the busy client's 3,000
    expect(r.rows).toBeLessThanOrEqual(1);
  }
  // all together a few probes per metadata-document client (3 with codes), not thousands of rows
  expect(reads.reduce((n, r) => n + r.loops, 0)).toBeLessThanOrEqual(3 * 3 + 4);
});

test("past the walk's bound (many metadata-document clients) the index is aggregated instead, with the same answer", async () => {
  const sql = db.sql;
  const [user] = await sql<{ id: string }[]>`SELECT id FROM users LIMIT 1`;
  await sql`INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scopes, resource, family_id, expires_at, created_at)
            SELECT md5('many' || g || '.' || twice) || md5(g || 'many'), 'https://many' || g || '.example/client.json', ${user!.id}::uuid, 'http://127.0.0.1/cb',
                   repeat('a', 43), ARRAY['search'], 'http://x/mcp', gen_random_uuid(), now(), now() - make_interval(days => 3) + make_interval(secs => g % 7)
            FROM generate_series(1, ${WALKED_CLIENTS_MAX + 100}::int) g, generate_series(1, 2) twice`;
  await sql`ANALYZE oauth_codes`;
  const codes = await aggregated();
  const { page, plan } = await listed({ limit: 200, kind: "metadata_document" });
  expect(page.total).toBe(4 + WALKED_CLIENTS_MAX + 100);
  for (const item of page.items) {
    const c = codes.get(item.clientId);
    expect([item.clientId, item.createdAt]).toEqual([item.clientId, c ? (item.blockedAt && item.blockedAt < c.first ? item.blockedAt : c.first) : item.blockedAt!]);
    expect([item.clientId, item.lastUsedAt]).toEqual([item.clientId, c?.last ?? null]);
  }
  // the aggregate went through the URL clients' index: their codes, never a registered client's
  const [{ n: urlCodes }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_codes WHERE client_id LIKE 'http%'`;
  expect(plan).toContain("Group Key: oauth_codes.client_id");
  expect(plan).not.toContain("Seq Scan on oauth_codes");
  const fromIndex = [...plan.matchAll(/(?:Bitmap Index Scan on|Index Only Scan using) oauth_codes_document_client[^\n]*actual rows=(\d+) loops=1\)/g)].map((m) => Number(m[1]));
  expect(fromIndex).toContain(urlCodes!);
  for (const r of codeReads(plan)) expect(r.rows).toBeLessThanOrEqual(urlCodes!);
});
