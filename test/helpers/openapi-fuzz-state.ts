/**
 * Coherent state for the OpenAPI fuzz test (test/http/fuzz-openapi.test.ts): before the run it creates, through the
 * API itself, the resources the operations whose success path needs multi-step state refer to, each one dedicated to
 * the operation that uses it up (a cart only the checkout pays, a refund only the merchant's decision decides, a
 * webhook only the rotation rotates), and returns coherent requests for those operations (KnownValues.seeds in
 * test/helpers/openapi-fuzz.ts). What cannot be reached through the API is named in NOT_SEEDED with the reason.
 */
import { calculatePKCECodeChallenge, generateRandomCodeVerifier } from "oauth4webapi";
import { exportJWK, generateKeyPair, type CryptoKey } from "jose";
import { ADMIN, merchantLogin, placeOrder, type TestKey } from "./agents.ts";
import { keyProof, registerUserKey, signMandate } from "./ap2.ts";
import { ACP, UCP } from "./bridge.ts";
import type { Seed } from "./openapi-fuzz.ts";
import { BOARD, GREEN } from "./partly-paid.ts";
import { linkPath } from "./sandbox-approval.ts";
import type { TestServer } from "./server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, MOCK
const CALLBACK = "http://127.0.0.1:9/callback";
const ACP_VERSION = { "api-version": "2025-09-29" };
/**
 * The store the paying seeds buy at. Not demo-store: the run fuzzes demo-store's merchant settings (its payment
 * methods among them, which a valid-looking PUT narrows), so a payment there depends on which operation ran first.
 */
const PAY_STORE = "greenleaf-living";

/** An AP2 mandate for up to 100 USD at PAY_STORE signed by `userKey` (kid "phone"): the request body for a cart. */
async function mandateFor(userKey: CryptoKey, cartId: string) {
  const contents = {
    payment_mandate_id: `pm_${crypto.randomUUID()}`,
    payment_details_id: "details_1",
    payment_details_total: { label: "Total", amount: { currency: "USD", value: 100 } },
    payment_response: { request_id: "req_1", method_name: "CARD", details: { token: "tok_approve" } },
    merchant_agent: PAY_STORE,
    timestamp: new Date().toISOString(),
  };
  const intent = { merchants: [PAY_STORE], intent_expiry: new Date(Date.now() + 3_600_000).toISOString() };
  return { cart_id: cartId, intent_mandate: intent, payment_mandate: { payment_mandate_contents: contents, user_authorization: await signMandate(userKey, [contents, intent]) } };
}

/** Operations whose success path the seeds do not reach, and why (the coverage table lists them). */
export const NOT_SEEDED: Record<string, string> = {
  "POST /api/v1/agent/search-by-image": "not implemented: its documented answer is 501",
  "POST /api/v1/admin/trust/alerts/{id}/resolve": "needs an anomaly alert, which only a score jump in the stored facts raises (no API makes one)",
};

export interface StateInput {
  srv: TestServer;
  /** the fuzzer's agent key (ENTERPRISE, every scope, owned by the admin) */
  key: TestKey;
  adminToken: string;
  /** the owner of greenleaf-living */
  foreignToken: string;
}

function must<T extends { status: number; body: any }>(what: string, r: T, ...want: number[]): T {
  if (!want.includes(r.status)) throw new Error(`fuzz state ${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r;
}

/** Coherent requests by operation key, built through the API (each call's answer checked). */
export async function buildSeeds({ srv, key, adminToken, foreignToken }: StateInput): Promise<Record<string, Seed[]>> {
  const H = key.headers;
  const admin = { authorization: `Bearer ${adminToken}` };
  const post = (path: string, body: unknown, headers: Record<string, string> = H) => srv.json(path, { method: "POST", headers, body });
  const cart = async (product = SKILLET): Promise<string> => must("cart", await post("/api/v1/agent/cart", { items: [{ product_id: product, quantity: 1 }] }), 201).body.data.id;
  const times = <T>(n: number, f: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));
  const seeds: Record<string, Seed[]> = {};

  // a checkout that waits for the buyer's approval at the sandbox processor: its link and its pending order
  const waiting = async () => {
    const cartId = await cart(BOARD);
    const r = must("approval checkout", await post("/api/v1/agent/checkout", { cartId, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() }), 202);
    const url = (r.body.details?.approval_urls as { url: string }[] | undefined)?.[0]?.url;
    if (!url) throw new Error(`fuzz state: no approval link in ${JSON.stringify(r.body).slice(0, 300)}`);
    const [order] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartId}`;
    return { link: linkPath(url), orderId: order!.id };
  };

  const jobs: Promise<void>[] = [];
  let pub: string | undefined; // the public OAuth client (consentForm)
  const add = (op: string, f: () => Promise<Seed[]>) => jobs.push(f().then((s) => void (seeds[op] = s)));

  add("POST /api/v1/auth/login", async () => [{ url: "/api/v1/auth/login", body: ADMIN }, { url: "/api/v1/auth/login", body: merchantLogin("greenleaf-living") }]);
  add("POST /api/v1/agent/cart", async () => [{ url: "/api/v1/agent/cart", body: { items: [{ product_id: SKILLET, quantity: 1 }] } }]);
  add("POST /api/v1/agent/negotiate", async () => [{ url: "/api/v1/agent/negotiate", body: { productId: GREEN, merchantSlug: PAY_STORE, bidPrice: 1_000_000, currency: "USD" } }]);
  add("PUT /api/v1/admin/users/plan", async () => [{ url: "/api/v1/admin/users/plan", body: { email: "owner@greenleaf-living.example", plan: "GROWTH" } }]);
  add("GET /api/v1/admin/users/plan", async () => [{ url: `/api/v1/admin/users/plan?email=${encodeURIComponent("owner@greenleaf-living.example")}` }]);
  add("GET /api/v1/admin/users/agent-keys", async () => [{ url: `/api/v1/admin/users/agent-keys?email=${encodeURIComponent(ADMIN.email)}` }]);

  // the agent's checkout, a paid order's cancel, the sandbox approval page and decisions
  add("POST /api/v1/agent/checkout", async () =>
    (await times(4, () => cart(GREEN))).map((cartId) => ({ url: "/api/v1/agent/checkout", body: { cartId, payment_method: "tok_approve" } })),
  );
  jobs.push(
    (async () => {
      const w = await times(5, waiting);
      seeds["GET /api/v1/sandbox/payments/{intentId}/{token}"] = w.slice(0, 2).map((x) => ({ url: x.link }));
      seeds["POST /api/v1/sandbox/payments/{intentId}/{token}/{decision}"] = [{ url: `${w[0]!.link}/approve`, body: {} }, { url: `${w[1]!.link}/reject`, body: {} }];
      seeds["POST /api/v1/agent/orders/{orderId}/cancel"] = w.slice(2).map((x) => ({ url: `/api/v1/agent/orders/${x.orderId}/cancel`, body: { reason: "changed my mind" } }));
    })(),
  );

  // orders the merchant reconciles: the sandbox's tok_amount_mismatch captures a minor unit more than asked, and the
  // order stays pending, flagged amount_mismatch (docs/checkout.md)
  add("POST /api/v1/merchant/stores/{slug}/orders/{id}/reconcile", async () =>
    (
      await times(2, async () => {
        const cartId = await cart(BOARD);
        must("mismatched capture", await post("/api/v1/agent/checkout", { cartId, payment_method: "tok_amount_mismatch", idempotency_key: crypto.randomUUID() }), 409);
        const [order] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartId}`;
        return order!.id;
      })
    ).map((id, i) => ({ url: `/api/v1/merchant/stores/demo-store/orders/${id}/reconcile`, body: { action: i ? "refund" : "accept" } })),
  );

  // refunds the merchant decides (each its own paid order)
  add("POST /api/v1/merchant/stores/{slug}/refunds/{id}/{decision}", async () => {
    const ids = await times(3, async () => {
      const orderId = await placeOrder(srv, key, SKILLET);
      return must("refund", await post(`/api/v1/agent/orders/${orderId}/refund`, { amount: 1, reason: "fuzz" }), 201).body.data.refund_id as string;
    });
    return ids.map((id, i) => ({ url: `/api/v1/merchant/stores/demo-store/refunds/${id}/${i === 1 ? "reject" : "approve"}`, body: {} }));
  });

  // webhooks: one to rotate, one whose deliveries are listed and redelivered (an order makes a delivery)
  jobs.push(
    (async () => {
      const hook = async () => must("webhook", await post("/api/v1/merchant/stores/demo-store/webhooks", { url: "http://127.0.0.1:9/hook", events: ["order.created"] }, admin), 201).body.data.id as string;
      const [rotate, listed] = await Promise.all([hook(), hook()]);
      seeds["POST /api/v1/merchant/stores/{slug}/webhooks/{id}/rotate-secret"] = [{ url: `/api/v1/merchant/stores/demo-store/webhooks/${rotate}/rotate-secret` }];
      await placeOrder(srv, key, SKILLET);
      const base = `/api/v1/merchant/stores/demo-store/webhooks/${listed}`;
      let delivery: string | undefined;
      for (let i = 0; i < 50 && !delivery; i++) {
        const r = await srv.json(`${base}/deliveries`, { headers: admin });
        delivery = (r.body?.data as { id?: string }[] | undefined)?.[0]?.id;
        if (!delivery) await Bun.sleep(100);
      }
      seeds["GET /api/v1/merchant/stores/{slug}/webhooks/{id}/deliveries"] = [{ url: `${base}/deliveries` }, { url: `${base}/deliveries?limit=5` }];
      if (delivery) seeds["POST /api/v1/merchant/stores/{slug}/webhooks/{id}/deliveries/{deliveryId}/redeliver"] = [{ url: `${base}/deliveries/${delivery}/redeliver` }];
    })(),
  );

  // a trust appeal an operator resolves (one open appeal per store: not demo-store's, which the appeal route files)
  add("POST /api/v1/admin/trust/appeals/{id}/resolve", async () => {
    const r = await post("/api/v1/trust/appeal", { storeSlug: "greenleaf-living", reason: "the score misses our recent on-time orders" }, { authorization: `Bearer ${foreignToken}` });
    return [{ url: `/api/v1/admin/trust/appeals/${must("appeal", r, 201).body.data.id}/resolve`, body: { decision: "rejected", note: "reviewed by the fuzzer" } }];
  });

  // ACP and UCP sessions to complete, and a valid ACP create
  add("POST /api/v1/agent/acp/checkout_sessions", async () => [{ url: ACP, body: { items: [{ id: BOARD, quantity: 1 }] }, headers: ACP_VERSION }]);
  add("POST /api/v1/agent/acp/checkout_sessions/{id}/complete", async () =>
    (await times(3, async () => must("acp", await post(ACP, { items: [{ id: GREEN, quantity: 1 }] }, { ...H, ...ACP_VERSION }), 201).body.id as string)).map((id) => ({
      url: `${ACP}/${id}/complete`,
      body: { payment_data: { token: "tok_approve", provider: "stripe" } },
      headers: ACP_VERSION,
    })),
  );
  add("POST /api/v1/agent/ucp/checkout-sessions/{id}/complete", async () =>
    (await times(3, async () => must("ucp", await post(UCP, { line_items: [{ item: { id: GREEN }, quantity: 1 }], currency: "USD" }), 201).body.id as string)).map((id) => ({
      url: `${UCP}/${id}/complete`,
      body: { payment: { instruments: [{ id: "pi_1", handler_id: "sandbox_card", credential: { type: "token", token: "tok_approve" } }] } },
    })),
  );

  // AP2: a user key registered on the fuzzer's agent key signs mandates for dedicated carts; the user-key routes
  jobs.push(
    (async () => {
      const pair = await generateKeyPair("ES256", { extractable: true });
      must("ap2 user key", await registerUserKey(srv, adminToken, key.id, "phone", pair), 200);
      const carts = await times(3, () => cart(GREEN));
      seeds["POST /api/v1/agent/ap2/payment-mandates"] = await Promise.all(carts.map(async (c) => ({ url: "/api/v1/agent/ap2/payment-mandates", body: await mandateFor(pair.privateKey, c) })));
      const keys = `/api/v1/agent-keys/${key.id}/ap2-user-keys`;
      seeds["GET /api/v1/agent-keys/{id}/ap2-user-keys"] = [{ url: keys }];
      const gone = await generateKeyPair("ES256", { extractable: true });
      must("ap2 user key to delete", await registerUserKey(srv, adminToken, key.id, "old-phone", gone), 200);
      seeds["DELETE /api/v1/agent-keys/{id}/ap2-user-keys/{kid}"] = [{ url: `${keys}/old-phone` }];
      // a registration's proof answers the nonce of the challenge before it
      const fresh = await generateKeyPair("ES256", { extractable: true });
      const jwk = await exportJWK(fresh.publicKey);
      const challenge = must("ap2 key challenge", await srv.json(`${keys}/tablet`, { method: "PUT", headers: admin, body: { jwk } }), 400);
      seeds["PUT /api/v1/agent-keys/{id}/ap2-user-keys/{kid}"] = [{ url: `${keys}/tablet`, body: { jwk, proof: await keyProof(fresh.privateKey, challenge.body.details.proof_payload) } }];
    })(),
  );

  // OAuth: a public client (the consent flow) and a confidential machine client (tokens, revocation)
  jobs.push(
    (async () => {
      const meta = { client_name: "fuzz agent", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" };
      seeds["POST /api/v1/oauth/register"] = [{ url: "/api/v1/oauth/register", body: meta }];
      pub = must("oauth public client", await post("/api/v1/oauth/register", meta, {}), 201).body.client_id as string;
      const m2m = must("oauth m2m client", await post("/api/v1/oauth/register", { client_name: "fuzz m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post", scope: "search" }, admin), 201).body;
      const creds = { client_id: m2m.client_id as string, client_secret: m2m.client_secret as string, resource: `${srv.url}/demo-store/mcp` };
      const form = { "content-type": "application/x-www-form-urlencoded" };
      const token = async () => must("oauth token", await srv.json("/api/v1/oauth/token", { method: "POST", headers: form, body: new URLSearchParams({ grant_type: "client_credentials", ...creds }).toString() }), 200).body.access_token as string;
      seeds["POST /api/v1/oauth/token"] = [{ url: "/api/v1/oauth/token", body: { grant_type: "client_credentials", ...creds } }, { url: "/api/v1/oauth/token", body: { grant_type: "client_credentials", scope: "search", ...creds } }];
      seeds["POST /api/v1/oauth/revoke"] = (await times(2, token)).map((t) => ({ url: "/api/v1/oauth/revoke", body: { token: t, client_id: creds.client_id, client_secret: creds.client_secret } }));
      const authorize = async () => {
        const q = new URLSearchParams({
          response_type: "code",
          client_id: pub!,
          redirect_uri: CALLBACK,
          code_challenge: await calculatePKCECodeChallenge(generateRandomCodeVerifier()),
          code_challenge_method: "S256",
          state: crypto.randomUUID(),
          resource: `${srv.url}/demo-store/mcp`,
          scope: "search",
        });
        return `/api/v1/oauth/authorize?${q}`;
      };
      seeds["GET /api/v1/oauth/authorize"] = await times(2, async () => ({ url: await authorize() }));
      // the credential management routes (a client to delete, one whose secret is replaced, a grant to revoke)
      const m2mClient = async (name: string) =>
        must("oauth client", await post("/api/v1/oauth/register", { client_name: name, grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post", scope: "search" }, admin), 201).body.client_id as string;
      const [doomed, rotated] = await Promise.all([m2mClient("fuzz doomed"), m2mClient("fuzz rotated")]);
      seeds["DELETE /api/v1/oauth/clients/{client_id}"] = [{ url: `/api/v1/oauth/clients/${doomed}` }];
      seeds["POST /api/v1/oauth/clients/{client_id}/secret"] = [{ url: `/api/v1/oauth/clients/${rotated}/secret` }];
      // the consent form a browser posts: the page's hidden fields and its cookie, with the user's log-in
      seeds["POST /api/v1/oauth/authorize"] = await times(3, () => consentForm());
      // a grant (refresh-token family): one code flow through to the token endpoint
      const verifier = generateRandomCodeVerifier();
      const flow = await consentForm(verifier);
      const consented = await fetch(srv.url + flow.url, { method: "POST", redirect: "manual", headers: { ...form, ...flow.headers }, body: new URLSearchParams(flow.body).toString() });
      const code = new URL(consented.headers.get("location") ?? "http://x/").searchParams.get("code");
      if (!code) throw new Error(`fuzz state: consent answered ${consented.status} ${consented.headers.get("location")}`);
      const exchange = { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: pub!, resource: `${srv.url}/demo-store/mcp` };
      must("oauth code exchange", await srv.json("/api/v1/oauth/token", { method: "POST", headers: form, body: new URLSearchParams(exchange).toString() }), 200);
      const grants = must("oauth grants", await srv.json("/api/v1/oauth/grants", { headers: admin }), 200).body.data as { id: string }[];
      seeds["DELETE /api/v1/oauth/grants/{id}"] = grants.slice(0, 1).map((g) => ({ url: `/api/v1/oauth/grants/${g.id}` }));
    })(),
  );

  await Promise.all(jobs);
  return seeds;

  /** The consent form a browser posts: the page's hidden fields and its cookie, with the user's log-in. */
  async function consentForm(verifier = generateRandomCodeVerifier()): Promise<{ url: string; body: Record<string, string>; headers: Record<string, string> }> {
    const q = new URLSearchParams({
      response_type: "code",
      client_id: pub!,
      redirect_uri: CALLBACK,
      code_challenge: await calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: crypto.randomUUID(),
      resource: `${srv.url}/demo-store/mcp`,
      scope: "search",
    });
    const page = await fetch(`${srv.url}/api/v1/oauth/authorize?${q}`, { redirect: "manual" });
    const html = await page.text();
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0]!;
    const body: Record<string, string> = {};
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      body[m[1]!] = m[2]!.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#39;/g, "'");
    }
    if (page.status !== 200 || !body.csrf_token) throw new Error(`fuzz state: consent page ${page.status} without a csrf_token`);
    return { url: "/api/v1/oauth/authorize", body: { ...body, email: ADMIN.email, password: ADMIN.password, decision: "allow" }, headers: { cookie } };
  }
}
