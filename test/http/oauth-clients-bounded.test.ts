/**
 * Audit A-5 (fixed: gateway/oauth/register.ts OWNED_CLIENTS_MAX). Auditor A's finding: the OAuth clients an account
 * registers with a session had no bound. They are never swept (clients.ts deleteUnusedClients keeps every client with
 * an owner), no per-account cap applied (agent keys stop at AGENT_KEYS_MAX_LIVE = 25 live keys, 409 too_many_keys,
 * though docs/access.md calls a client_credentials client "a standing credential ... like an agent key"), and
 * GET /api/v1/oauth/clients and the dashboard's Connected apps page list every one of them. 120 registrations gave
 * 120 live client_credentials credentials. Now an account holds at most 25 live ones: one more is 409
 * too_many_clients (an OAuth error body, like the endpoint's other refusals) until it deletes one.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const MAX = 25;
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: string;

beforeAll(async () => {
  owner = await login(srv, merchantLogin("greenleaf-living"));
}, 120_000);

const register = (i: number, token: string | null = owner) =>
  srv.json("/api/v1/oauth/register", {
    method: "POST",
    headers: token ? { authorization: `Bearer ${token}` } : {},
    body: token
      ? { client_name: `m2m ${i}`, grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "search cart checkout" }
      : { client_name: `public ${i}`, redirect_uris: ["http://127.0.0.1:50999/cb"], token_endpoint_auth_method: "none" },
  });

test("an account holds at most 25 live registered OAuth clients: one more is 409 too_many_clients until one is deleted", async () => {
  const statuses: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < MAX + 5; i++) {
    const r = await register(i);
    statuses.push(r.status);
    if (r.status === 201) ids.push(r.body.client_id as string);
  }
  expect(statuses.filter((s) => s === 201).length).toBe(MAX);
  expect(statuses.slice(MAX)).toEqual([409, 409, 409, 409, 409]);

  const refused = await register(99);
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ success: false, error: "too_many_clients", code: "too_many_clients" });
  expect(refused.body.error_description).toContain(`(${MAX})`);

  const list = await srv.json("/api/v1/oauth/clients", { headers: { authorization: `Bearer ${owner}` } });
  expect(list.status).toBe(200);
  expect((list.body.data as unknown[]).length).toBe(MAX);

  // deleting one makes room for one
  const del = await srv.json(`/api/v1/oauth/clients/${ids[0]}`, { method: "DELETE", headers: { authorization: `Bearer ${owner}` } });
  expect(del.status).toBe(200);
  expect((await register(100)).status).toBe(201);
  expect((await register(101)).status).toBe(409);

  // another account, and registrations without a session (bounded by the per-address rate and the sweep), are not counted here
  const other = await login(srv, merchantLogin("cozy-paws-supply"));
  expect((await register(102, other)).status).toBe(201);
  expect((await register(103, null)).status).toBe(201);
}, 120_000);

test("registrations racing for the account's last place do not both take it", async () => {
  const token = await login(srv, merchantLogin("maple-pine-home"));
  const live = async () => ((await srv.json("/api/v1/oauth/clients", { headers: { authorization: `Bearer ${token}` } })).body.data as unknown[]).length;
  while ((await live()) < MAX - 1) expect((await register(0, token)).status).toBe(201);
  const raced = await Promise.all(Array.from({ length: 6 }, (_, i) => register(200 + i, token)));
  expect(raced.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  expect(await live()).toBe(MAX);
}, 120_000);
