/**
 * Audit V1: an AP2 user key was registered from its public JWK alone, under any account. Public keys are public, so
 * anyone who saw a user's key could register it on their own agent key and present that user's signed mandates.
 * Registration now needs a proof of possession (a JWS by the key over a server nonce, the agent key id and the kid),
 * and a key another account holds with a proof is 409 conflict.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";
import * as ap2 from "../helpers/ap2.ts";
import { keyProof, paymentContents, registerUserKey, type Ap2Agent } from "../helpers/ap2.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";

let a: Ap2Agent;
let srv: TestServer;
let admin: string;
let strangerBearer: string;
let stranger: TestKey;

beforeAll(async () => {
  a = await ap2.startAp2Agent();
  srv = a.srv;
  admin = await login(srv);
  strangerBearer = await login(srv, merchantLogin("greenleaf-living"));
  stranger = await createKey(srv, { scopes: ALL_SCOPES, token: strangerBearer });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const url = (keyId: string, kid: string) => `/api/v1/agent-keys/${keyId}/ap2-user-keys/${kid}`;
const put = (keyId: string, kid: string, body: unknown, bearer = admin) => srv.json(url(keyId, kid), { method: "PUT", headers: { authorization: `Bearer ${bearer}` }, body });
const registered = async (keyId: string, kid: string) =>
  (await srv.db.sql`SELECT 1 FROM ap2_user_keys WHERE agent_key_id = ${keyId} AND kid = ${kid}`).length > 0;

/** The nonce challenge for registering `jwk` as `kid` on the agent key. */
async function challenge(keyId: string, kid: string, jwk: unknown, bearer = admin) {
  const r = await put(keyId, kid, { jwk }, bearer);
  expect(r.status).toBe(400);
  return r.body.details as { nonce: string; proof_payload: { nonce: string; agent_key_id: string; kid: string } };
}

describe("registering an AP2 user key needs a proof of possession (audit V1)", () => {
  test("a PUT without proof is 400 MISSING_REQUIRED_ARGUMENT with a one-use nonce and the payload to sign, and registers nothing", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const r = await put(a.key.id, "tablet", { jwk: await exportJWK(pair.publicKey) });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      success: false,
      code: "MISSING_REQUIRED_ARGUMENT",
      details: { field: "proof", proof_typ: "ap2-key-proof+jwt", proof_payload: { agent_key_id: a.key.id, kid: "tablet" } },
    });
    expect(r.body.details.nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.body.details.proof_payload.nonce).toBe(r.body.details.nonce);
    expect(Date.parse(r.body.details.nonce_expires_at)).toBeGreaterThan(Date.now());
    expect(await registered(a.key.id, "tablet")).toBe(false);
  });

  test("another account registering the user's public key alone (the audit's repro) gets only a challenge it cannot answer: its proof by another key is 400 INVALID_ARGUMENT (signature)", async () => {
    const jwk = await exportJWK(a.userPair.publicKey);
    const c = await challenge(stranger.id, "phone", jwk, strangerBearer);
    const own = await generateKeyPair("ES256", { extractable: true });
    const r = await put(stranger.id, "phone", { jwk, proof: await keyProof(own.privateKey, c.proof_payload) }, strangerBearer);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "proof", reason: "signature" } });
    expect(await registered(stranger.id, "phone")).toBe(false);
  });

  test("a proof for another agent key or another kid is 400 INVALID_ARGUMENT (binding)", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    const c = await challenge(a.key.id, "tablet", jwk);
    const other = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
    for (const payload of [{ ...c.proof_payload, agent_key_id: other.id }, { ...c.proof_payload, kid: "laptop" }]) {
      const r = await put(a.key.id, "tablet", { jwk, proof: await keyProof(pair.privateKey, payload) });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "proof", reason: "binding" } });
    }
    expect(await registered(a.key.id, "tablet")).toBe(false);
  });

  test("a nonce is good once, for the agent key it was issued to, until it expires: otherwise 400 INVALID_ARGUMENT (nonce)", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    const c = await challenge(a.key.id, "tablet", jwk);
    const proof = await keyProof(pair.privateKey, c.proof_payload);
    expect((await put(a.key.id, "tablet", { jwk, proof })).status).toBe(200);
    const again = await put(a.key.id, "tablet", { jwk, proof });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "proof", reason: "nonce" } });
    // a nonce issued to another agent key of the account
    const other = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
    const elsewhere = await challenge(other.id, "tablet", jwk);
    const crossed = await put(a.key.id, "tablet", { jwk, proof: await keyProof(pair.privateKey, { ...elsewhere.proof_payload, agent_key_id: a.key.id }) });
    expect(crossed.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { reason: "nonce" } });
    // an expired nonce
    const late = await challenge(a.key.id, "tablet", jwk);
    await srv.db.sql`UPDATE ap2_key_nonces SET expires_at = now() - interval '1 second' WHERE nonce = ${late.nonce}`;
    const expired = await put(a.key.id, "tablet", { jwk, proof: await keyProof(pair.privateKey, late.proof_payload) });
    expect(expired.status).toBe(400);
    expect(expired.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { reason: "nonce" } });
  });

  test("a key another account holds with a proof is 409 conflict (user_key_registered_by_another_account), even with a valid proof", async () => {
    // e.g. the device's owner trying a second account: its proof is valid, the key stays with the first account
    const r = await registerUserKey(srv, strangerBearer, stranger.id, "phone", a.userPair);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      success: false,
      code: "conflict",
      details: { field: "jwk", reason: "user_key_registered_by_another_account", jwk_thumbprint: await calculateJwkThumbprint(await exportJWK(a.userPair.publicKey)) },
    });
    expect(await registered(stranger.id, "phone")).toBe(false);
  });

  test("the same account registers the key on another of its agent keys", async () => {
    const other = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
    const r = await registerUserKey(srv, admin, other.id, "phone", a.userPair);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ agent_key_id: other.id, kid: "phone", alg: "ES256" });
  });

  test("a registration shows the key's RFC 7638 thumbprint (as jose computes it, for ES256 and EdDSA) and when it was proven", async () => {
    for (const alg of ["ES256", "EdDSA"] as const) {
      const pair = await generateKeyPair(alg, { extractable: true, ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}) });
      const r = await registerUserKey(srv, admin, a.key.id, `k-${alg}`, pair, alg);
      expect(r.status).toBe(200);
      expect(r.body.data.jwk_thumbprint).toBe(await calculateJwkThumbprint(await exportJWK(pair.publicKey)));
      expect(Date.parse(r.body.data.proven_at)).toBeGreaterThan(Date.now() - 60_000);
    }
  });

  test("a proven registration takes the key from another account's registration made before proofs", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    // as before 0077: the public key alone, registered by the stranger
    await srv.db.sql`INSERT INTO ap2_user_keys (agent_key_id, kid, alg, jwk) VALUES (${stranger.id}, 'squat', 'ES256', ${srv.db.sql.json(jwk as never)})`;
    const r = await registerUserKey(srv, admin, a.key.id, "pocket", pair);
    expect(r.status).toBe(200);
    expect(await registered(stranger.id, "squat")).toBe(false);
  });

  test("a registration from before proofs (proven_at null) keeps verifying its mandates", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const legacy = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
    await srv.db.sql`INSERT INTO ap2_user_keys (agent_key_id, kid, alg, jwk) VALUES (${legacy.id}, 'phone', 'ES256', ${srv.db.sql.json((await exportJWK(pair.publicKey)) as never)})`;
    const list = await srv.json(`/api/v1/agent-keys/${legacy.id}/ap2-user-keys`, { headers: { authorization: `Bearer ${admin}` } });
    expect(list.body.data).toMatchObject([{ kid: "phone", proven_at: null }]);
    const cart = await ap2.cheapCart({ ...a, key: legacy });
    const pmc = paymentContents(1_000);
    const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await ap2.signMandate(pair.privateKey, [pmc]) } };
    const r = await ap2.agentPost(srv, legacy)("/ap2/payment-mandates", body);
    expect(r.status).toBe(200);
    expect(r.body.data.order_ids).toHaveLength(1);
  });
});
