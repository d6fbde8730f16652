/**
 * /.well-known/jwks.json publishes the trust-score keys only: a platform JWT (a login session here) must not verify
 * against the trust key set (MCP audit N7). OAuth clients find the JWT key at the authorization server's jwks_uri.
 */
import { expect, test } from "bun:test";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { login } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer();

test("a session token's key is not in the trust key set, and the token does not verify against it", async () => {
  const token = await login(srv);
  const trust = (await srv.json("/.well-known/jwks.json")).body as { keys: { kid: string }[] };
  expect(trust.keys.length).toBeGreaterThan(0);
  const kid = decodeProtectedHeader(token).kid;
  expect(trust.keys.map((k) => k.kid)).not.toContain(kid);
  await expect(jwtVerify(token, createLocalJWKSet(trust as never))).rejects.toThrow();
});

test("the JWT key is published where OAuth clients look for it (jwks_uri)", async () => {
  const token = await login(srv);
  const meta = (await srv.json("/.well-known/oauth-authorization-server")).body as { jwks_uri: string };
  const jwks = (await srv.json(new URL(meta.jwks_uri).pathname)).body as { keys: { kid: string }[] };
  expect(jwks.keys.map((k) => k.kid)).toContain(decodeProtectedHeader(token).kid!);
});
