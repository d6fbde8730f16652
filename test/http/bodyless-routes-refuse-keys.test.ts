/**
 * Routes that take no body refuse one that carries keys (helper D's LOW item of session 20, fixed by helper C in
 * session 21): the merchant's webhook endpoint enable and disable, and the operator's trust signing-key rotation,
 * ignored any body, so `{"enabled": false}` sent to …/enable enabled the endpoint and answered 200, and a text body was
 * as good as none. Now, as on every route with a body (docs/conventions.md "Request bodies"): no body or `{}` is the
 * action; a key is 400 validation_error naming it, nothing done; a body that is not a JSON object is 400.
 */
import { beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, admin: true, config: { RATE_LIMITS_ENABLED: false } });
let admin: Record<string, string>;
let endpoint = "";
const base = () => `/api/v1/merchant/stores/demo-store/webhooks/${endpoint}`;

beforeAll(async () => {
  admin = { authorization: `Bearer ${await login(srv)}` };
  const r = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", { method: "POST", headers: admin, body: { url: "http://127.0.0.1:9/hook", events: ["order.created"] } });
  expect(r.status).toBe(201);
  endpoint = r.body.data.id;
}, 60_000);

const enabled = async () => (await srv.db.sql<{ enabled: boolean }[]>`SELECT disabled_at IS NULL AS enabled FROM webhook_endpoints WHERE id = ${endpoint}`)[0]!.enabled;
const raw = (path: string, body: string, contentType = "application/json") =>
  fetch(`${srv.url}${path}`, { method: "POST", headers: { ...admin, "content-type": contentType }, body }).then(async (r) => ({ status: r.status, body: await r.json() }));

test("webhook endpoint disable and enable refuse a body with a key (400 naming it, nothing done) and act on no body or {}", async () => {
  const refused = await srv.json(`${base()}/disable`, { method: "POST", headers: admin, body: { reason: "maintenance" } });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({ success: false, code: "validation_error", details: { field: "reason" } });
  expect(await enabled()).toBe(true);

  const off = await srv.json(`${base()}/disable`, { method: "POST", headers: admin, body: {} });
  expect(off.status).toBe(200);
  expect(await enabled()).toBe(false);

  const wrong = await srv.json(`${base()}/enable`, { method: "POST", headers: admin, body: { enabled: false } });
  expect(wrong.status).toBe(400);
  expect(wrong.body).toMatchObject({ code: "validation_error", details: { field: "enabled" } });
  expect(await enabled()).toBe(false);
  const text = await raw(`${base()}/enable`, "please", "text/plain");
  expect(text.status).toBe(400);
  expect(text.body.code).toBe("validation_error");
  const notObject = await raw(`${base()}/enable`, "[1]");
  expect(notObject.status).toBe(400);
  expect(await enabled()).toBe(false);

  const on = await raw(`${base()}/enable`, "");
  expect(on.status).toBe(200);
  expect(await enabled()).toBe(true);
});

test("the operator's trust key rotation refuses a body with a key and rotates on no body", async () => {
  const keys = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM signing_keys`)[0]!.n;
  const before = await keys();
  const refused = await srv.json("/api/v1/admin/trust/keys/rotate", { method: "POST", headers: admin, body: { keep_old: false } });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({ code: "validation_error", details: { field: "keep_old" } });
  expect(await keys()).toBe(before);
  const rotated = await raw("/api/v1/admin/trust/keys/rotate", "");
  expect(rotated.status).toBe(200);
  expect(await keys()).toBe(before + 1);
});
