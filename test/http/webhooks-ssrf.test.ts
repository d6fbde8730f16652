/**
 * SSRF guard of webhook URLs in production mode (NODE_ENV=production, so ALLOW_PRIVATE_URLS is false): private,
 * loopback, link-local and metadata addresses are refused at registration, also behind a host name, and the check
 * is repeated after DNS resolution at every delivery attempt (DNS rebinding). Host names resolve through a test
 * resolver installed on the running server: the only network traffic stays on loopback.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { EXTRAS_RESOLVER } from "../../actors/webhook/dispatcher.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import type { Sql } from "../../infra/db.ts";
import type { ResolvedAddress } from "../../infra/ssrf.ts";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

setDefaultTimeout(60_000);

let srv: TestServer;
let token: string;
const dns = new Map<string, ResolvedAddress[]>();

beforeAll(async () => {
  srv = await startServer({ config: { NODE_ENV: "production", ALLOW_PRIVATE_URLS: false } });
  srv.running.services.extras.set(EXTRAS_RESOLVER, async (host: string) => {
    const a = dns.get(host);
    if (!a) throw new Error(`ENOTFOUND ${host}`);
    return a;
  });
  token = await login(srv);
});

afterAll(async () => {
  await srv?.stop();
});

const registerUrl = (url: string) =>
  srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: { url, events: ["order.created"] },
  });

describe("webhook URLs in production", () => {
  const refused: [string, string][] = [
    ["loopback", "https://127.0.0.1/hooks"],
    ["loopback in decimal form", "https://2130706433/hooks"],
    ["10/8", "https://10.20.30.40/hooks"],
    ["the cloud metadata address", "https://169.254.169.254/latest/meta-data/"],
    ["IPv6 loopback", "https://[::1]/hooks"],
    ["IPv4-mapped IPv6 loopback", "https://[::ffff:127.0.0.1]/hooks"],
    ["localhost", "https://localhost/hooks"],
  ];
  for (const [what, url] of refused) {
    test(`${what} is refused with 400 validation_error`, async () => {
      const r = await registerUrl(url);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "url", reason: "non_public_address" } });
    });
  }

  test("a host name resolving to loopback is refused with 400 validation_error", async () => {
    dns.set("hooks.example-merchant.test", [{ address: "127.0.0.1", family: 4 }]);
    const r = await registerUrl("https://hooks.example-merchant.test/hooks");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { reason: "non_public_address", addressClass: "loopback" } });
  });

  test("a host name with one private address among public ones is refused", async () => {
    dns.set("mixed.example-merchant.test", [
      { address: "93.184.216.34", family: 4 },
      { address: "10.0.0.7", family: 4 },
    ]);
    const r = await registerUrl("https://mixed.example-merchant.test/hooks");
    expect(r.status).toBe(400);
    expect(r.body.details).toMatchObject({ reason: "non_public_address", addressClass: "private" });
  });

  test("plain http is refused even to a public address", async () => {
    const r = await registerUrl("http://93.184.216.34/hooks");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { reason: "scheme" } });
  });

  test("a name that resolved publicly at registration and to loopback at delivery is not contacted", async () => {
    dns.set("rebind.example-merchant.test", [{ address: "93.184.216.34", family: 4 }]);
    const r = await registerUrl("https://rebind.example-merchant.test/hooks");
    expect(r.status).toBe(201);
    // the name now points inside: the attempt must be refused before any connection
    dns.set("rebind.example-merchant.test", [{ address: "127.0.0.1", family: 4 }]);
    const eventId = (await srv.db.sql.begin((tx) =>
      enqueueWebhookEvent(tx as unknown as Sql, {
        storeSlug: "demo-store",
        kind: "order.created",
        payload: { event: "order.created", timestamp: new Date().toISOString(), orderId: crypto.randomUUID(), merchantSlug: "demo-store", totalAmount: 1, currency: "USD", status: "pending" },
      }),
    )) as string;
    const deadline = Date.now() + 10_000;
    let d: { status: string; attempts: number; lastStatusCode: number | null; lastError: string | null } | undefined;
    while (Date.now() < deadline) {
      const list = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${r.body.data.id}/deliveries`, { headers: { authorization: `Bearer ${token}` } });
      expect(list.status).toBe(200);
      d = list.body.data.find((x: { eventId: string }) => x.eventId === eventId);
      // the attempt is counted when claimed, before its send: wait for its outcome too (a pending delivery showed
      // attempts 1 with no error yet on a CI run)
      if (d && d.attempts > 0 && d.lastError !== null) break;
      await Bun.sleep(100);
    }
    expect(d).toMatchObject({ status: "failed", attempts: 1, lastStatusCode: null });
    expect(d!.lastError).toContain("refused before connecting: non_public_address");
  });
});
