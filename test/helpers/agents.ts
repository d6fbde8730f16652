/** Test helpers for the identity flows: log in as a seeded user and mint agent keys through the real API. */
import type { TestServer } from "./server.ts";

export const ADMIN = { email: "admin@example.com", password: "admin-password" };
export const merchantLogin = (slug: string) => ({ email: `owner@${slug}.example`, password: "merchant-password" });

export async function login(srv: TestServer, who: { email: string; password: string } = ADMIN): Promise<string> {
  const r = await srv.json("/api/v1/auth/login", { method: "POST", body: who });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data.token as string;
}

export interface TestKey {
  id: string;
  key: string;
  headers: Record<string, string>;
}

/**
 * The admin's session token per server, for set-up calls: one log-in instead of one per
 * key. A token the server no longer accepts (a moved clock, a restart) is replaced by a new log-in.
 */
const adminTokens = new WeakMap<TestServer, Promise<string>>();

async function asAdmin(srv: TestServer, call: (token: string) => Promise<{ status: number }>): Promise<void> {
  let token = adminTokens.get(srv);
  if (!token) adminTokens.set(srv, (token = login(srv)));
  token.catch(() => adminTokens.delete(srv));
  if ((await call(await token)).status !== 401) return;
  const fresh = login(srv);
  adminTokens.set(srv, fresh);
  await call(await fresh);
}

/** Creates an agent key (as the admin by default) with the given scopes/tier. */
export async function createKey(
  srv: TestServer,
  opts: { scopes?: string[]; tier?: string; name?: string; token?: string } = {},
): Promise<TestKey> {
  const create = (token: string) =>
    srv.json("/api/v1/agent-keys", {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: { name: opts.name ?? "test key", ...(opts.scopes ? { scopes: opts.scopes } : {}), ...(opts.tier ? { tier: opts.tier } : {}) },
    });
  let r!: Awaited<ReturnType<typeof create>>;
  if (opts.token) r = await create(opts.token);
  else await asAdmin(srv, async (token) => (r = await create(token)));
  if (r.status !== 201) throw new Error(`key creation failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { id: r.body.data.id, key: r.body.data.key, headers: { "x-agent-api-key": r.body.data.key } };
}

export const ALL_SCOPES = ["search", "compare", "cart", "checkout", "checkout:delegate", "orders:read", "merchants:read", "protocols:discover"];

/** Places a one-line order through the real API (cart, then a one-call checkout) and returns its order id. */
export async function placeOrder(srv: TestServer, key: TestKey, productId: string, paymentMethod = "MOCK"): Promise<string> {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  if (cart.status !== 201) throw new Error(`cart failed: ${cart.status} ${JSON.stringify(cart.body)}`);
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: paymentMethod } });
  if (r.status !== 200) throw new Error(`checkout failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data.order_id as string;
}

/**
 * Two agent keys of every scope, as two tenants: `key` acts and `other` checks isolation (another tenant's cart,
 * order or refund reads as not found). Created in that order.
 */
export async function twoTenants(srv: TestServer): Promise<{ key: TestKey; other: TestKey }> {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const other = await createKey(srv, { scopes: ALL_SCOPES });
  return { key, other };
}

/**
 * Sets an account's plan (the highest key tier it may mint) as an operator would: PUT /api/v1/admin/users/plan with
 * the seeded operator's session unless a token is given.
 */
export async function setPlan(srv: TestServer, email: string, plan: string, token?: string): Promise<void> {
  const put = (t: string) => srv.json("/api/v1/admin/users/plan", { method: "PUT", headers: { authorization: `Bearer ${t}` }, body: { email, plan } });
  let r!: Awaited<ReturnType<typeof put>>;
  if (token) r = await put(token);
  else await asAdmin(srv, async (t) => (r = await put(t)));
  if (r.status !== 200) throw new Error(`setting the plan failed: ${r.status} ${JSON.stringify(r.body)}`);
}
