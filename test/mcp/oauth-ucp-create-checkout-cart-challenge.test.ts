/**
 * Audit A-2 (fixed: the tool declares the scope its line_items need, ToolDef.argumentScopes, and the dispatcher
 * challenges an OAuth token without it as for the tool's own scopes). Auditor A's finding: the least-privilege OAuth token for the ucp_* checkout tools ("search checkout:delegate")
 * calling ucp_create_checkout with line_items (which makes a cart, so it also needs `cart`, docs/access.md "A bridged
 * create also needs cart") gets HTTP 200 with a tool error `forbidden`, no WWW-Authenticate challenge. docs/access.md
 * (MCP): "An OAuth token that lacks a tool's scope is HTTP 403 with WWW-Authenticate: Bearer …,
 * error="insufficient_scope", scope="<the token's scopes> <the missing one>"" — which is what create_cart answers for
 * the same token. Without the challenge an MCP client cannot step up (the SDK only re-authorizes on the 403), so the
 * documented least-privilege UCP flow dead-ends. gateway/mcp/tools/ucp.ts ucpCreateCheckout handler throws
 * fail("forbidden") inside the tool instead of the dispatcher's scope challenge (server.ts insufficientOAuthScope).
 */
import { beforeAll, expect, test } from "bun:test";
import { createKey, login, merchantLogin } from "../helpers/agents.ts";
import { clientCredentialsToken, registerMachineClient } from "../helpers/oauth.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO, DEMO_PRODUCT, rpc } from "../mcp/helpers.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: string;

beforeAll(async () => {
  owner = await login(srv, merchantLogin("greenleaf-living"));
}, 120_000);

test("ucp_create_checkout from line_items with a token lacking cart is the 403 insufficient_scope challenge, like create_cart", async () => {
  const client = await registerMachineClient(srv, owner, { name: "delegate-only", scope: "search checkout:delegate" });
  const token = await clientCredentialsToken(srv, client, "search checkout:delegate");
  const call = (name: string, args: unknown) => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name, arguments: args }, { authorization: `Bearer ${token}` });

  // the reference: create_cart with the same token is the scope challenge
  const cart = await call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] });
  expect(cart.status).toBe(403);
  expect(cart.headers.get("www-authenticate")).toContain('error="insufficient_scope"');

  const r = await call("ucp_create_checkout", { line_items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] });
  expect({ status: r.status, challenge: r.headers.get("www-authenticate") ?? "" }).toMatchObject({ status: 403 });
  expect(r.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
  expect(r.headers.get("www-authenticate")).toContain('scope="search checkout:delegate cart"');
  expect(r.body.error.data).toMatchObject({ code: "forbidden", scope: "cart", tool: "ucp_create_checkout" });

  // from a cart_id no cart is made: the token's checkout:delegate is enough to get to the cart lookup
  const fromCart = await call("ucp_create_checkout", { cart_id: crypto.randomUUID() });
  expect(fromCart.status).toBe(200);
  expect(fromCart.body.result.isError).toBe(true);
  expect(fromCart.body.result.structuredContent.error.code).toBe("CART_NOT_FOUND");
}, 60_000);

test("an API key lacking cart keeps the tool error forbidden for ucp_create_checkout from line_items (nothing to step up to)", async () => {
  const key = await createKey(srv, { scopes: ["search", "checkout:delegate"] });
  const r = await rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "ucp_create_checkout", arguments: { line_items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } }, key.headers);
  expect(r.status).toBe(200);
  expect(r.headers.get("www-authenticate")).toBeNull();
  expect(r.body.result.isError).toBe(true);
  expect(r.body.result.structuredContent.error).toMatchObject({ code: "forbidden", details: { scope: "cart" } });
}, 60_000);
