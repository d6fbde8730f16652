/**
 * Audit A-4 (fixed: gateway/oauth/clients.ts authenticateClient answers 400 invalid_request). Auditor A's finding: the token endpoint accepts a request that authenticates the client with two methods at
 * once — the right secret in `Authorization: Basic` and another (wrong) `client_secret` in the body — and issues a
 * client_credentials token whose signed agent_trust says client_secret_basic. OAuth 2.1 §2.4 / RFC 6749 §2.3: "The
 * client MUST NOT use more than one authentication method in each request"; session 12 enforces the registered
 * method (audit X-6) precisely so that the method is unambiguous, but gateway/oauth/clients.ts authenticateClient
 * takes Basic when present and silently ignores `client_secret` (usedMethod = basic ? … : …). A request carrying two
 * credentials that disagree should be refused (400 invalid_request, or 401 invalid_client), not answered 200.
 * The revocation endpoint shares authenticateClient.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { basicAuth, FORM, mcpResource, registerMachineClient } from "../helpers/oauth.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: string;

beforeAll(async () => {
  owner = await login(srv, merchantLogin("greenleaf-living"));
}, 120_000);

test("a token or revocation request authenticating the client twice, Basic and a body client_secret, is 400 invalid_request", async () => {
  const c = await registerMachineClient(srv, owner, { name: "two-methods", scope: "search", method: "client_secret_basic" });
  const r = await srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { ...FORM, authorization: basicAuth(c.clientId, c.secret) },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: mcpResource(srv), scope: "search", client_secret: "mcps_not-the-secret" }).toString(),
  });
  expect({ status: r.status, error: r.body.error }).toEqual({ status: 400, error: "invalid_request" });

  // the same secret twice is still two methods
  const same = await srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { ...FORM, authorization: basicAuth(c.clientId, c.secret) },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: mcpResource(srv), scope: "search", client_secret: c.secret }).toString(),
  });
  expect({ status: same.status, error: same.body.error }).toEqual({ status: 400, error: "invalid_request" });

  // the revocation endpoint authenticates clients the same way
  const revoke = await srv.json("/api/v1/oauth/revoke", {
    method: "POST",
    headers: { ...FORM, authorization: basicAuth(c.clientId, c.secret) },
    body: new URLSearchParams({ token: "rt_anything", client_secret: "mcps_not-the-secret" }).toString(),
  });
  expect({ status: revoke.status, error: revoke.body.error }).toEqual({ status: 400, error: "invalid_request" });

  // one method alone still works
  const ok = await srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { ...FORM, authorization: basicAuth(c.clientId, c.secret) },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: mcpResource(srv), scope: "search" }).toString(),
  });
  expect(ok.status).toBe(200);
}, 60_000);
