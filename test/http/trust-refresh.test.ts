import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicKey, verify as nodeVerify } from "node:crypto";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { TRUST_ACTOR_ID, trustActor } from "../../actors/trust/index.ts";
import { ADMIN, login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const HOUR = 3_600_000;
const clock = new ManualClock(Date.now());
let srv: TestServer;

/** Independent of jose: hand-parsed compact JWS, key by kid, node:crypto Ed25519. */
function independentVerify(jws: string, jwks: { keys: { kid?: string; x?: string; crv?: string }[] }, nowSeconds: number): Record<string, unknown> | null {
  const [h, p, s] = jws.split(".");
  if (!h || !p || !s) return null;
  const header = JSON.parse(Buffer.from(h, "base64url").toString("utf8")) as { alg?: string; kid?: string };
  const payload = JSON.parse(Buffer.from(p, "base64url").toString("utf8")) as Record<string, unknown>;
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  if (header.alg !== "EdDSA" || !jwk?.x || jwk.crv !== "Ed25519") return null;
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  if (!nodeVerify(null, Buffer.from(`${h}.${p}`, "ascii"), key, Buffer.from(s, "base64url"))) return null;
  return typeof payload.exp === "number" && payload.exp > nowSeconds ? payload : null;
}

const historyCount = async (): Promise<number> => Number((await srv.db.sql`SELECT count(*) AS n FROM trust_score_history`)[0].n);
const storeCount = async (): Promise<number> => Number((await srv.db.sql`SELECT count(*) AS n FROM stores`)[0].n);
const kidOf = (jws: string): string => JSON.parse(Buffer.from(jws.split(".")[0], "base64url").toString("utf8")).kid;

beforeAll(async () => {
  // No background reminder poll: the test decides when reminders are looked at.
  srv = await startServer({ boot: { clock, reminderPollMs: 0 }, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

describe("the 6-hour refresh", () => {
  test("at boot, only the stores without a computed score are scored (trigger boot); the refresh waits 6 hours", async () => {
    const stores = await storeCount();
    expect(await historyCount()).toBe(stores);
    const triggers = await srv.db.sql`SELECT DISTINCT trigger FROM trust_score_history`;
    expect(triggers.map((t) => t.trigger)).toEqual(["boot"]);
    const [r] = await srv.db.sql<{ due_at: Date }[]>`SELECT due_at FROM actor_reminders WHERE kind = 'trust' AND id = 'global' AND name = 'refreshAll'`;
    expect(r.due_at.getTime()).toBe(clock.now() + 6 * HOUR);
  });

  test("a second boot on the same database scores nothing again: scored stores keep their number until the reminder", async () => {
    const stores = await storeCount();
    const answer = await srv.running.services.actors.ask(trustActor, TRUST_ACTOR_ID, "scoreUnscored", {});
    expect(answer).toEqual({ scored: 0 });
    expect(await historyCount()).toBe(stores);
  });

  test("the durable reminder fires after 6 hours, scores every store and re-arms itself", async () => {
    const stores = await storeCount();
    clock.advance(5 * HOUR);
    await srv.running.host!.pollReminders();
    expect(await historyCount()).toBe(stores);

    clock.advance(HOUR);
    expect(await srv.running.host!.pollReminders()).toBeGreaterThanOrEqual(1);
    expect(await historyCount()).toBe(2 * stores);
    const triggers = await srv.db.sql`SELECT DISTINCT trigger FROM trust_score_history ORDER BY trigger`;
    expect(triggers.map((t) => t.trigger)).toEqual(["boot", "refresh"]);
    const [r] = await srv.db.sql<{ due_at: Date }[]>`SELECT due_at FROM actor_reminders WHERE kind = 'trust' AND id = 'global' AND name = 'refreshAll'`;
    expect(r.due_at.getTime()).toBe(clock.now() + 6 * HOUR);

    clock.advance(6 * HOUR);
    await srv.running.host!.pollReminders();
    expect(await historyCount()).toBe(3 * stores);
    const [demo] = await srv.db.sql`SELECT count(*) AS n, max(computed_at) AS last FROM trust_score_history WHERE store_slug = 'demo-store'`;
    expect(Number(demo.n)).toBe(3);
    expect(new Date(demo.last).getTime()).toBe(clock.now());
  });

  test("the published score's next refresh is the armed reminder", async () => {
    const d = (await srv.json("/api/v1/stores/demo-store/trust-score")).body.data;
    expect(Date.parse(d.computed_at)).toBe(clock.now());
    expect(Date.parse(d.next_refresh_at)).toBe(clock.now() + 6 * HOUR);
  });
});

describe("signing key rotation", () => {
  test("a rotated-out key stays in the JWKS until its last signature expires, then leaves it", async () => {
    const admin = await login(srv, ADMIN);
    const before = (await srv.json("/api/v1/stores/demo-store/trust-score")).body.data;
    const oldKid = kidOf(before.jws);

    const rot = await srv.json("/api/v1/admin/trust/keys/rotate", { method: "POST", headers: { authorization: `Bearer ${admin}` } });
    expect(rot.status).toBe(200);
    expect(rot.body.data.retiredKid).toBe(oldKid);
    const newKid = rot.body.data.activeKid;
    expect(newKid).not.toBe(oldKid);

    const jwks = (await srv.json("/.well-known/jwks.json")).body;
    const kids = jwks.keys.map((k: { kid: string }) => k.kid);
    expect(kids).toContain(oldKid);
    expect(kids).toContain(newKid);
    // Signatures made before the rotation still verify.
    expect(independentVerify(before.jws, jwks, Math.floor(clock.now() / 1000))).not.toBeNull();

    // The next refresh signs with the new key.
    clock.advance(6 * HOUR);
    await srv.running.host!.pollReminders();
    const after = (await srv.json("/api/v1/stores/demo-store/trust-score")).body.data;
    expect(kidOf(after.jws)).toBe(newKid);
    expect(independentVerify(after.jws, (await srv.json("/.well-known/jwks.json")).body, Math.floor(clock.now() / 1000))).not.toBeNull();

    // 24 h after the old key's last signature, nothing it signed is valid: it is no longer published.
    clock.set(Date.parse(before.expires_at) + 1000);
    const later = (await srv.json("/.well-known/jwks.json")).body.keys.map((k: { kid: string }) => k.kid);
    expect(later).not.toContain(oldKid);
    expect(later).toContain(newKid);
  });

  test("the private halves are stored sealed only", async () => {
    const rows = await srv.db.sql<{ sealed_private: string; public_jwk: Record<string, unknown> }[]>`
      SELECT sealed_private, public_jwk FROM signing_keys WHERE purpose = 'trust'`;
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const r of rows) {
      expect(r.sealed_private.startsWith("v1.")).toBe(true);
      expect(r.sealed_private).not.toContain('"d"');
      expect(r.public_jwk.d).toBeUndefined();
    }
  });
});
