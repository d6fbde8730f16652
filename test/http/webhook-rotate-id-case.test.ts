/**
 * A webhook endpoint's id may come in any letter case in a path (the routes' `format: "uuid"` and the uuid column
 * both accept it), but it is also the endpoint actor's id and the sealed secret's AAD, which compare as text.
 * Audit M-5: `rotate-secret` with the id in upper case sealed the new secret under `webhook-secret:<ID>`, which no
 * claim (opening under the stored lower-case id) could open: after a 200 the endpoint never delivered again. The
 * same routes (deliveries, redeliver, delete) addressed a second activation `webhook/<ID>` beside the endpoint's own.
 * The routes now take the id as the endpoint's row spells it (gateway/rest/webhooks.ts `endpointIdOf`), and the actor
 * refuses another spelling and a secret it could not open.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { sealWebhookSecret, webhookSecretsKey } from "../../actors/webhook/deliver.ts";
import { webhookActor } from "../../actors/webhook/index.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import { generateWebhookSecret, verifyWebhook } from "../../actors/webhook/signature.ts";
import type { Sql } from "../../infra/db.ts";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

setDefaultTimeout(30_000);
const SLUG = "greenleaf-living";
let srv: TestServer;
let token = "";
/** What each endpoint received, by its receiver path (every test's endpoint gets the store's events). */
const got = new Map<string, { id: string; body: string; sig: string | null }[]>();
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (req) => {
    const path = new URL(req.url).pathname;
    got.set(path, [...(got.get(path) ?? []), { id: req.headers.get("x-webhook-id")!, body: await req.text(), sig: req.headers.get("x-webhook-signature") }]);
    return new Response("ok");
  },
});
const auth = () => ({ authorization: `Bearer ${token}` });
const base = `/api/v1/merchant/stores/${SLUG}/webhooks`;

beforeAll(async () => {
  srv = await startServer({ config: { SECRET_KEY: "d".repeat(64), RATE_LIMITS_ENABLED: false } });
  token = await login(srv);
}, 120_000);
afterAll(async () => {
  receiver.stop(true);
  await srv?.stop();
});

async function enqueue(): Promise<string> {
  const payload = { event: "order.created", timestamp: new Date().toISOString(), orderId: crypto.randomUUID(), merchantSlug: SLUG, totalAmount: 10, currency: "USD", status: "pending" };
  return (await srv.db.sql.begin((tx) => enqueueWebhookEvent(tx as unknown as Sql, { storeSlug: SLUG, kind: "order.created", payload }))) as string;
}

/** Waits until `path` received n deliveries and the endpoint's deliveries are all recorded delivered. */
async function received(path: string, id: string, n: number): Promise<{ id: string; body: string; sig: string | null }[]> {
  const settled = async () => {
    const [r] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ${id} AND status <> 'delivered'`;
    return r!.n === 0;
  };
  for (let i = 0; i < 200 && ((got.get(path)?.length ?? 0) < n || !(await settled())); i++) {
    await srv.running.host!.pollReminders().catch(() => {});
    await Bun.sleep(25);
  }
  expect(got.get(path)?.length ?? 0).toBe(n);
  expect(await settled()).toBe(true);
  return got.get(path)!;
}

async function register(path: string): Promise<string> {
  const r = await srv.json(base, { method: "POST", headers: auth(), body: { url: `http://127.0.0.1:${receiver.port}${path}`, events: ["order.created"] } });
  expect(r.status).toBe(201);
  return r.body.data.id as string;
}

test("a secret rotated with the endpoint id in upper case signs the next delivery", async () => {
  const id = await register("/rotated");
  await enqueue();
  await received("/rotated", id, 1);

  const rotated = await srv.json(`${base}/${id.toUpperCase()}/rotate-secret`, { method: "POST", headers: auth(), body: { overlapSeconds: 0 } });
  expect(rotated.status).toBe(200);
  expect(rotated.body.data.id).toBe(id);
  const secret: string = rotated.body.data.secret;

  const eventId = await enqueue();
  const [, next] = await received("/rotated", id, 2);
  expect(next!.id).toBe(eventId);
  expect(verifyWebhook(next!.sig, next!.body, secret).ok).toBe(true);
});

test("the deliveries, redeliver and delete routes with upper-case ids act on the endpoint's one actor", async () => {
  const id = await register("/routes");
  const eventId = await enqueue();
  await received("/routes", id, 1);
  const activations = srv.running.host!.activationCount("webhook");

  const list = await srv.json(`${base}/${id.toUpperCase()}/deliveries`, { headers: auth() });
  expect(list.status).toBe(200);
  expect(list.body.data.map((d: { eventId: string; status: string }) => [d.eventId, d.status])).toEqual([[eventId, "delivered"]]);
  const deliveryId: string = list.body.data[0].id;

  const again = await srv.json(`${base}/${id.toUpperCase()}/deliveries/${deliveryId.toUpperCase()}/redeliver`, { method: "POST", headers: auth() });
  expect(again.status).toBe(202);
  expect(again.body.data.id).toBe(deliveryId);
  const [, resent] = await received("/routes", id, 2);
  expect(resent!.id).toBe(eventId);

  const gone = await srv.json(`${base}/${id.toUpperCase()}`, { method: "DELETE", headers: auth() });
  expect(gone.status).toBe(200);
  expect(gone.body.data.id).toBe(id);
  // no second activation (`webhook/<ID>`) was started by any of these routes, and no reminder waits under that name
  expect(srv.running.host!.activationCount("webhook")).toBeLessThanOrEqual(activations);
  const stray = await srv.db.sql`SELECT 1 FROM actor_reminders WHERE kind = 'webhook' AND id = ${id.toUpperCase()}`;
  expect(stray.length).toBe(0);
});

test("the webhook actor refuses an upper-case id and a secret sealed for another id, and keeps the endpoint's secret", async () => {
  const id = await register("/actor");
  const key = webhookSecretsKey(srv.running.services.extras.get("secretKey") as Uint8Array);
  const before = await srv.db.sql<{ s: string }[]>`SELECT secret_sealed AS s FROM webhook_endpoints WHERE id = ${id}`;
  const ask = (actorId: string, sealedFor: string) =>
    srv.running.services.actors
      .ask(webhookActor, actorId, "rotateSecret", { secretSealed: sealWebhookSecret(key, sealedFor, generateWebhookSecret()), overlapMs: 0 }, { timeoutMs: 10_000 })
      .then(
        () => "rotated",
        (e: { code?: string }) => e.code,
      );
  expect(await ask(id.toUpperCase(), id.toUpperCase())).toBe("internal_error");
  expect(await ask(id, id.toUpperCase())).toBe("internal_error");
  const after = await srv.db.sql<{ s: string }[]>`SELECT secret_sealed AS s FROM webhook_endpoints WHERE id = ${id}`;
  expect(after[0]!.s).toBe(before[0]!.s);
});

test("an endpoint whose secret was sealed under its upper-case id before the fix is repaired by one rotation with the default overlap", async () => {
  const id = await register("/repair");
  const key = webhookSecretsKey(srv.running.services.extras.get("secretKey") as Uint8Array);
  // the state a pre-fix upper-case rotation left: a current secret no claim can open
  await srv.db.sql`UPDATE webhook_endpoints SET secret_sealed = ${sealWebhookSecret(key, id.toUpperCase(), generateWebhookSecret())} WHERE id = ${id}`;
  const stuck = await enqueue();

  const rotated = await srv.json(`${base}/${id}/rotate-secret`, { method: "POST", headers: auth() });
  expect(rotated.status).toBe(200);
  // the unopenable secret is not kept as the previous one (it would fail every claim for the 24 h overlap)
  expect(rotated.body.data.previousSecretExpiresAt).toBeNull();
  const secret: string = rotated.body.data.secret;

  const next = await enqueue();
  const got2 = await received("/repair", id, 2);
  expect(got2.map((g) => g.id).sort()).toEqual([stuck, next].sort());
  for (const g of got2) expect(verifyWebhook(g.sig, g.body, secret).ok).toBe(true);
});
