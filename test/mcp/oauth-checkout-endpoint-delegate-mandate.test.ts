/**
 * Audit A-6 (fixed: issue_payment_mandate takes checkout or checkout:delegate, like the REST AP2 mandate route).
 * Auditor A's finding: on a real merchant's dedicated checkout endpoint (`/{slug}/mcp/checkout`, the spec's
 * machine-to-machine bucket), the least-scope challenge of the ucp_* checkout tools sends an OAuth client to a scope
 * that cannot pay there. The anonymous 401 for ucp_complete_checkout asks for `checkout:delegate` (review R2-6,
 * gateway/oauth/scopes.ts challengeScope), but that endpoint's complete_checkout / ucp_complete_checkout require a
 * `payment_mandate` (gateway/mcp/tools/integrations.ts verifyMandateFor: MISSING_REQUIRED_ARGUMENT), and the only way
 * to get one, issue_payment_mandate, takes `checkout` alone (integrations.ts `scopes: ["checkout"]`): a
 * client_credentials client registered for the challenge's scopes gets 403 insufficient_scope "checkout" there, and
 * since a confidential client's registered set binds, it can never step up (invalid_scope). docs/access.md says the
 * challenge names "the least that works". Either the mandate tool accepts the bridge scopes, or the challenge on this
 * endpoint asks for `checkout`; this test accepts both.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { basicAuth, registerMachineClient, tokenRequest } from "../helpers/oauth.ts";
import { useServer } from "../helpers/server.ts";
import { rpc } from "../mcp/helpers.ts";

const STORE = "cozy-paws-supply";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: string;

beforeAll(async () => {
  owner = await login(srv, merchantLogin("greenleaf-living"));
}, 120_000);

test("the scope the checkout endpoint's challenge asks for ucp_complete_checkout can also get the mandate that endpoint requires", async () => {
  const path = `/${STORE}/mcp/checkout`;
  const anonymous = await rpc(srv, path, "tools/call", {
    name: "ucp_complete_checkout",
    arguments: { checkout_session_id: crypto.randomUUID(), idempotency_key: crypto.randomUUID(), payment_method: "MOCK" },
  });
  expect(anonymous.status).toBe(401);
  const scope = /scope="([^"]+)"/.exec(anonymous.headers.get("www-authenticate") ?? "")?.[1];
  expect(scope).toBeDefined();

  // a client_credentials client registered for exactly what the challenge asked
  const client = await registerMachineClient(srv, owner, { name: "follows the challenge", scope: scope! });
  const t = await tokenRequest(srv, { grant_type: "client_credentials", scope: scope!, resource: `${srv.url}${path}` }, basicAuth(client.clientId, client.secret));
  expect(t.status).toBe(200);

  // the mandate this endpoint's complete requires: asked of the human (HUMAN_CONFIRMATION_REQUIRED sessionless), not 403
  const mandate = await rpc(srv, path, "tools/call", { name: "issue_payment_mandate", arguments: { max_amount: 10, currency: "USD" } }, { authorization: `Bearer ${t.body.access_token}` });
  expect({ scope, status: mandate.status, challenge: mandate.headers.get("www-authenticate") }).toEqual({ scope, status: 200, challenge: null });
}, 60_000);
