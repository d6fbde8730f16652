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

/** A product of qualified-eu-shop priced in EUR, in stock, without variants: new items in another currency than USD's. */
export async function aEuroProduct(srv: Pick<TestServer, "db">): Promise<string> {
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = 'qualified-eu-shop' AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) AND variants = '[]'::jsonb ORDER BY id LIMIT 1`;
  return p!.id;
}
