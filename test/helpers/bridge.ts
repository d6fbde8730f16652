/**
 * What the ACP/UCP session tests share: the two protocols' session routes and a request as one agent key under a
 * fresh Idempotency-Key (so no two calls of a test replay one another).
 */
import type { TestKey } from "./agents.ts";
import type { TestServer } from "./server.ts";

export const ACP = "/api/v1/agent/acp/checkout_sessions";
export const UCP = "/api/v1/agent/ucp/checkout-sessions";

/** `method path` as key `k`, with `body` when given, under a new Idempotency-Key. */
export function sendAs(srv: TestServer, k: TestKey, method: string, path: string, body?: unknown) {
  return srv.json(path, { method, headers: { ...k.headers, "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
}
