/**
 * A failed payment's rollback names the rail's reason per store (helper C, C-3): `details.stores[].reason` beside
 * `outcome: failed`. It carried only the outcome, so an x402 refusal without an intent row read `settle_failed` on
 * the x402 checkout (test/x402/rail-failure-reason.test.ts); the card sandbox's `tok_fail` says `processor_error`. A
 * later outcome of the same leg drops the earlier failure's reason.
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });

test("a failed card payment's 402 names the rail's reason in details.stores, and a decline after it on the same key shows no stale reason", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const idem = crypto.randomUUID();

  const failed = await checkout({ cartId, payment_method: "tok_fail", idempotency_key: idem });
  expect(failed.status).toBe(402);
  expect(failed.body.code).toBe("PAYMENT_FAILED_ROLLED_BACK");
  expect(failed.body.details.stores).toEqual([{ store_id: "demo-store", status: "unpaid", outcome: "failed", reason: "processor_error" }]);

  const declined = await checkout({ cartId, payment_method: "tok_decline", idempotency_key: idem });
  expect(declined.status).toBe(402);
  expect(declined.body.code).toBe("PAYMENT_DECLINED");
  expect(declined.body.details.stores).toEqual([{ store_id: "demo-store", status: "unpaid", outcome: "declined" }]);
}, 60_000);
