/**
 * Review RV-2: an AP2 user key's thumbprint hashed its JWK's text, and one key has several texts that import and
 * verify (`=` padding, the 2 unused bits of a 43-character base64url, leading zero bytes of a P-256 coordinate). Each
 * spelling had its own thumbprint, so the same user key registered in a second spelling claimed one mandate again
 * (two paid carts), and 0077's cross-account cleanup and a proven registration's take-over missed another account's
 * row in another spelling. Registration now takes the canonical spelling only, the thumbprint hashes the canonical
 * coordinates, and migration 0080 brings existing rows (and their claims) to it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from "jose";
import { applyMigrations } from "../../infra/db.ts";
import * as ap2 from "../helpers/ap2.ts";
import { keyProof, paymentContents, type Ap2Agent } from "../helpers/ap2.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import type { TestServer } from "../helpers/server.ts";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/** The same 32 bytes: one of the 2 unused low bits of the last character flipped. */
const spareBits = (s: string, bit = 1) => s.slice(0, -1) + ALPHABET[ALPHABET.indexOf(s[s.length - 1]!) ^ bit];
const padded = (s: string) => `${s}=`;
/** The same P-256 coordinate (an integer) with a leading zero byte: 33 bytes. */
const leadingZero = (s: string) => Buffer.concat([Buffer.from([0]), Buffer.from(s, "base64url")]).toString("base64url");

let a: Ap2Agent;
let srv: TestServer;
let admin: string;
let b: TestKey;
let stranger: TestKey;

beforeAll(async () => {
  a = await ap2.startAp2Agent();
  srv = a.srv;
  admin = await login(srv);
  b = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
  stranger = await createKey(srv, { scopes: ALL_SCOPES, token: await login(srv, merchantLogin("greenleaf-living")) });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const put = (keyId: string, kid: string, body: unknown) =>
  srv.json(`/api/v1/agent-keys/${keyId}/ap2-user-keys/${kid}`, { method: "PUT", headers: { authorization: `Bearer ${admin}` }, body });
const pay = (k: TestKey, body: unknown) => ap2.agentPost(srv, k)("/ap2/payment-mandates", body);
const rowsOf = (keyId: string) => srv.db.sql<{ kid: string; jwk: JWK; thumbprint: string }[]>`SELECT kid, jwk, thumbprint FROM ap2_user_keys WHERE agent_key_id = ${keyId}`;

async function oneMandate() {
  const pmc = paymentContents(1_000);
  const user_authorization = await ap2.signMandate(a.userKey, [pmc]);
  return (cartId: string) => ({ cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
}

async function paidCount(cartIds: string[]): Promise<number> {
  const [r] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ANY(${cartIds}::uuid[]) AND status = 'paid'`;
  return r!.n;
}

function expectNonCanonical(r: { status: number; body: any }, field: string) {
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field, reason: "non_canonical" } });
}

describe("a user key is registered in its one spelling (review RV-2)", () => {
  test("a P-256 key with a coordinate padded, with its spare bits set or with a leading zero byte is 400 INVALID_ARGUMENT non_canonical, and nothing is registered", async () => {
    const jwk = await exportJWK(a.userPair.publicKey);
    const cases: [JWK, string][] = [
      [{ ...jwk, x: padded(jwk.x!) }, "jwk.x"],
      [{ ...jwk, x: spareBits(jwk.x!) }, "jwk.x"],
      [{ ...jwk, x: spareBits(jwk.x!, 2) }, "jwk.x"],
      [{ ...jwk, x: leadingZero(jwk.x!) }, "jwk.x"],
      [{ ...jwk, y: spareBits(jwk.y!) }, "jwk.y"],
      [{ ...jwk, y: `${jwk.y}==` }, "jwk.y"],
    ];
    for (const [variant, field] of cases) expectNonCanonical(await put(b.id, "tablet", { jwk: variant }), field);
    expect([...(await rowsOf(b.id))]).toEqual([]);
  });

  test("an Ed25519 key padded or with its spare bits set is 400 INVALID_ARGUMENT non_canonical", async () => {
    const ed = await exportJWK((await generateKeyPair("EdDSA", { extractable: true })).publicKey);
    expectNonCanonical(await put(b.id, "tablet", { jwk: { ...ed, x: padded(ed.x!) } }), "jwk.x");
    expectNonCanonical(await put(b.id, "tablet", { jwk: { ...ed, x: spareBits(ed.x!) } }), "jwk.x");
    expect([...(await rowsOf(b.id))]).toEqual([]);
  });

  test("the reviewer's repro: the user's key in another spelling, with a valid proof, on a second agent key is refused, and the mandate pays one cart", async () => {
    const jwk = await exportJWK(a.userPair.publicKey);
    const variant = { ...jwk, x: spareBits(jwk.x!) };
    // the proof is for the canonical spelling's challenge: the key's holder can sign anything
    const ch = await put(b.id, "phone", { jwk });
    expect(ch.status).toBe(400);
    const proof = await keyProof(a.userPair.privateKey, ch.body.details.proof_payload);
    expectNonCanonical(await put(b.id, "phone", { jwk: variant, proof }), "jwk.x");
    const forCart = await oneMandate();
    const [c1, c2] = await Promise.all([ap2.cheapCart(a), ap2.cheapCart({ ...a, key: b })]);
    expect((await pay(a.key, forCart(c1.cartId))).status).toBe(200);
    const second = await pay(b, forCart(c2.cartId));
    expect(second.status).toBe(401);
    expect(second.body).toMatchObject({ code: "AGENT_TOKEN_INVALID", details: { reason: "unknown_key" } });
    expect(await paidCount([c1.cartId, c2.cartId])).toBe(1);
  });

  test("the canonical spelling on a second agent key has the key's thumbprint, and one mandate still pays one cart", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
    const r = await ap2.registerUserKey(srv, admin, k.id, "phone", a.userPair);
    expect(r.status).toBe(200);
    const thumbprint = await calculateJwkThumbprint(await exportJWK(a.userPair.publicKey));
    expect(r.body.data.jwk_thumbprint).toBe(thumbprint);
    const forCart = await oneMandate();
    const [c1, c2] = await Promise.all([ap2.cheapCart(a), ap2.cheapCart({ ...a, key: k })]);
    expect((await pay(a.key, forCart(c1.cartId))).status).toBe(200);
    const second = await pay(k, forCart(c2.cartId));
    expect(second.status).toBe(403);
    expect(second.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart", reason: "presented_by_another_agent_key" } });
    expect(await paidCount([c1.cartId, c2.cartId])).toBe(1);
  });

  test("extra public members are dropped from the stored key and the thumbprint is the key's", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    const dressed = { ...jwk, kid: "my-phone", use: "sig", alg: "ES256", key_ops: ["verify"] };
    const ch = await put(b.id, "laptop", { jwk: dressed });
    expect(ch.status).toBe(400);
    const r = await put(b.id, "laptop", { jwk: dressed, proof: await keyProof(pair.privateKey, ch.body.details.proof_payload) });
    expect(r.status).toBe(200);
    expect(r.body.data.jwk).toEqual({ kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y });
    expect(r.body.data.jwk_thumbprint).toBe(await calculateJwkThumbprint(jwk));
  });

  test("coordinates that are no point of the curve are 400 INVALID_ARGUMENT invalid_key, and the next agent request still works", async () => {
    const jwk = await exportJWK(a.userPair.publicKey);
    const r = await put(b.id, "tablet", { jwk: { ...jwk, y: jwk.x } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "jwk", reason: "invalid_key" } });
    // Bun's WebCrypto import of such a point leaves an OpenSSL error behind that the next agent key's HMAC threw (500)
    const next = await ap2.agentPost(srv, stranger)("/cart", { items: [{ product_id: a.product, quantity: 1 }] });
    expect(next.status).toBe(201);
  });

  test("a registration stored in another spelling (from before 0080) hashes as its key: the owner's proven registration takes it from another account, which then cannot spend the owner's mandate", async () => {
    const jwk = await exportJWK(a.userPair.publicKey);
    await srv.db.sql`INSERT INTO ap2_user_keys (agent_key_id, kid, alg, jwk) VALUES (${stranger.id}, 'phone', 'ES256', ${srv.db.sql.json({ ...jwk, x: spareBits(jwk.x!, 2) } as never)})`;
    const [row] = await rowsOf(stranger.id);
    expect(row!.thumbprint).toBe(await calculateJwkThumbprint(jwk));
    expect((await ap2.registerUserKey(srv, admin, a.key.id, "phone", a.userPair)).status).toBe(200);
    expect([...(await rowsOf(stranger.id))]).toEqual([]);
    const forCart = await oneMandate();
    const [c1, c2] = [await ap2.cheapCart(a), await ap2.cheapCart({ ...a, key: stranger })];
    expect((await pay(a.key, forCart(c1.cartId))).status).toBe(200);
    expect((await pay(stranger, forCart(c2.cartId))).status).toBe(401);
    expect(await paidCount([c1.cartId, c2.cartId])).toBe(1);
  });
});

describe("migration 0080 brings stored user keys and their claims to the canonical spelling (review RV-2)", () => {
  let db: TestDatabase | undefined;
  let before: string | undefined;
  afterAll(async () => {
    await db?.drop();
    if (before) await rm(before, { recursive: true, force: true });
  });

  /** A P-256 key one of whose coordinates starts with a zero byte (so it has a 31-byte spelling too). */
  async function keyWithLeadingZero(): Promise<{ jwk: JWK; coord: "x" | "y" }> {
    for (;;) {
      const jwk = await exportJWK((await generateKeyPair("ES256", { extractable: true })).publicKey);
      for (const coord of ["x", "y"] as const) if (Buffer.from(jwk[coord]!, "base64url")[0] === 0) return { jwk, coord };
    }
  }

  test("variant spellings become the key's: one thumbprint per key, claims moved (the canonical one or the earliest kept), a key under two accounts stays with the one that proved it or with none, an unreadable key removed", async () => {
    // a database as 0079 left it
    const dir = resolve(import.meta.dir, "../../infra/migrations");
    before = await mkdtemp(join(tmpdir(), "acs-0079-"));
    for (const f of (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f) && f < "0080")) await symlink(join(dir, f), join(before, f));
    db = await createTestDatabase({ migrate: false });
    await applyMigrations(db.sql, before);
    const sql = db.sql;

    const user = async (email: string) => (await sql<{ id: string }[]>`INSERT INTO users (email, password_hash, role) VALUES (${email}, 'x', 'merchant') RETURNING id`)[0]!.id;
    const agentKey = async (userId: string) =>
      (await sql<{ id: string }[]>`INSERT INTO agent_keys (user_id, name, prefix, key_hash)
        VALUES (${userId}, 'k', ${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}, ${"0".repeat(64)}) RETURNING id`)[0]!.id;
    const [owner, other, third] = [await user("owner@a.example"), await user("other@b.example"), await user("third@c.example")];
    const [ownerA, ownerB, otherK, thirdK] = [await agentKey(owner), await agentKey(owner), await agentKey(other), await agentKey(third)];
    const reg = (keyId: string, kid: string, alg: string, jwk: unknown, proven: boolean) =>
      sql`INSERT INTO ap2_user_keys (agent_key_id, kid, alg, jwk, proven_at) VALUES (${keyId}, ${kid}, ${alg}, ${sql.json(jwk as never)}, ${proven ? new Date(Date.now() - 3_600_000) : null})`;
    const thumbOf = async (keyId: string, kid: string) => (await sql<{ t: string }[]>`SELECT thumbprint AS t FROM ap2_user_keys WHERE agent_key_id = ${keyId} AND kid = ${kid}`)[0]!.t;

    // P: the owner's proven key, a same-account copy in another spelling, another account's unproven copy in a third
    const p = await exportJWK((await generateKeyPair("ES256", { extractable: true })).publicKey);
    await reg(ownerA, "phone", "ES256", p, true);
    await reg(ownerB, "phone", "ES256", { ...p, x: spareBits(p.x!) }, false);
    await reg(otherK, "phone", "ES256", { ...p, y: padded(p.y!) }, false);
    // Q: held by two accounts, proven by neither (one in a spelling with a leading zero dropped)
    const q = await keyWithLeadingZero();
    const short = Buffer.from(q.jwk[q.coord]!, "base64url").subarray(1).toString("base64url");
    await reg(otherK, "tablet", "ES256", q.jwk, false);
    await reg(thirdK, "tablet", "ES256", { ...q.jwk, [q.coord]: short }, false);
    // R: one account's key with a leading zero byte, padding and extra members; S: an Ed25519 key padded
    const r = await exportJWK((await generateKeyPair("ES256", { extractable: true })).publicKey);
    await reg(thirdK, "laptop", "ES256", { ...r, x: padded(leadingZero(r.x!)), kid: "laptop", use: "sig" }, false);
    const s = await exportJWK((await generateKeyPair("EdDSA", { extractable: true })).publicKey);
    await reg(otherK, "wallet", "EdDSA", { ...s, x: padded(s.x!) }, false);
    // a key no JOSE library reads
    await reg(thirdK, "junk", "ES256", { kty: "EC", crv: "P-256", x: "not*base64url", y: p.y }, false);

    const [tp, tpB, tpOther] = [await thumbOf(ownerA, "phone"), await thumbOf(ownerB, "phone"), await thumbOf(otherK, "phone")];
    expect(new Set([tp, tpB, tpOther]).size).toBe(3); // 0077: three spellings, three "keys"
    const claim = (t: string, id: string, keyId: string, minutesAgo: number) =>
      sql`INSERT INTO ap2_mandate_agents (thumbprint, payment_mandate_id, agent_key_id, created_at) VALUES (${t}, ${id}, ${keyId}, now() - ${minutesAgo} * interval '1 minute')`;
    await claim(tpB, "pm_1", ownerB, 30); // pm_1 paid twice: under the variant first, then the canonical spelling
    await claim(tp, "pm_1", ownerA, 10);
    await claim(tpB, "pm_2", ownerB, 30); // pm_2 under two variants: the earliest is kept
    await claim(tpOther, "pm_2", otherK, 20);
    await claim(tp, "pm_3", ownerA, 5);

    expect(await applyMigrations(sql)).toContain("0080_ap2_canonical_user_keys.sql");

    const rows = await sql<{ agent_key_id: string; kid: string; jwk: JWK; thumbprint: string }[]>`
      SELECT agent_key_id, kid, jwk, thumbprint FROM ap2_user_keys ORDER BY kid, agent_key_id`;
    const P = await calculateJwkThumbprint(p);
    const R = await calculateJwkThumbprint(r);
    const S = await calculateJwkThumbprint(s);
    const expected = [
      { agent_key_id: thirdK, kid: "laptop", jwk: { kty: "EC", crv: "P-256", x: r.x, y: r.y }, thumbprint: R },
      ...[ownerA, ownerB].sort().map((id) => ({ agent_key_id: id, kid: "phone", jwk: { kty: "EC", crv: "P-256", x: p.x, y: p.y }, thumbprint: P })),
      { agent_key_id: otherK, kid: "wallet", jwk: { kty: "OKP", crv: "Ed25519", x: s.x }, thumbprint: S },
    ];
    expect([...rows]).toEqual(expected);
    const claims = await sql<{ thumbprint: string; payment_mandate_id: string; agent_key_id: string }[]>`
      SELECT thumbprint, payment_mandate_id, agent_key_id FROM ap2_mandate_agents ORDER BY payment_mandate_id`;
    expect([...claims]).toEqual([
      { thumbprint: P, payment_mandate_id: "pm_1", agent_key_id: ownerA },
      { thumbprint: P, payment_mandate_id: "pm_2", agent_key_id: ownerB },
      { thumbprint: P, payment_mandate_id: "pm_3", agent_key_id: ownerA },
    ]);
    // the one definition of the thumbprint agrees with jose on any spelling
    const [again] = await sql<{ t: string }[]>`SELECT ap2_jwk_thumbprint(${sql.json({ ...q.jwk, [q.coord]: short } as never)}::jsonb) AS t`;
    expect(again!.t).toBe(await calculateJwkThumbprint(q.jwk));
  }, 60_000);
});
