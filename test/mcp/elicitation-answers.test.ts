/**
 * What counts as the human's approval (audit B F5). The server asks `elicitation/create` with requestedSchema
 * `{approve: boolean, default true}` through `server.request`, so nothing in the SDK checks the answer against it:
 * the gateway does. `approve: true`, `{}` (the default) approve; `approve: false` declines; an answer outside the
 * schema (`"false"`, `0`, a list, or a key other than `approve`) approves nothing and is UPSTREAM_UNAVAILABLE
 * confirmation_not_completed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, DEMO_PRODUCT, errorOf, structured } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
});

afterAll(async () => {
  await srv?.stop();
});

const carts = async () => Number((await srv.db.sql<{ n: string }[]>`SELECT count(*) AS n FROM actor_state WHERE kind = 'cart'`)[0]!.n);

/** create_cart answered with `answer`: the tool's result and how many carts it made. */
async function createCartAnswering(answer: ElicitResult) {
  const agent = await connect(srv, { headers: key.headers, elicit: () => answer });
  try {
    const before = await carts();
    const result = await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] });
    expect(agent.elicitations.length).toBe(1);
    return { result, made: (await carts()) - before };
  } finally {
    await agent.close();
  }
}

describe("elicitation answers", () => {
  for (const content of [{ approve: "false" }, { approve: 0 }, { approve: 1 }, { approve: "true" }, { approve: [true] }]) {
    test(`an accepted answer ${JSON.stringify(content)} is not approval: UPSTREAM_UNAVAILABLE confirmation_not_completed, no cart`, async () => {
      const { result, made } = await createCartAnswering({ action: "accept", content } as unknown as ElicitResult);
      const e = errorOf(result);
      expect(e.code).toBe("UPSTREAM_UNAVAILABLE");
      expect(e.retryable).toBe(true);
      expect(e.details.reason).toBe("confirmation_not_completed");
      expect(made).toBe(0);
    }, 30_000);
  }

  // Review R3-10: an object without `approve` is the schema's default only when it is empty; another key answers some
  // other question (and {"approved": false} or {"confirm": "no"} reads as a no), so it approves nothing.
  for (const content of [{ approved: false }, { confirm: "no" }, { approve: true, note: "and cancel it" }]) {
    test(`an accepted answer with a key other than approve, ${JSON.stringify(content)}, is not approval: confirmation_not_completed, no cart`, async () => {
      const { result, made } = await createCartAnswering({ action: "accept", content } as unknown as ElicitResult);
      const e = errorOf(result);
      expect(e.code).toBe("UPSTREAM_UNAVAILABLE");
      expect(e.details.reason).toBe("confirmation_not_completed");
      expect(made).toBe(0);
    }, 30_000);
  }

  test("approve false is declined: HUMAN_CONFIRMATION_DECLINED, no cart", async () => {
    const { result, made } = await createCartAnswering({ action: "accept", content: { approve: false } });
    expect(errorOf(result).code).toBe("HUMAN_CONFIRMATION_DECLINED");
    expect(made).toBe(0);
  }, 30_000);

  test("approve true, an empty answer and no content approve (the schema's default is true)", async () => {
    for (const answer of [{ action: "accept", content: { approve: true } }, { action: "accept", content: {} }, { action: "accept" }] as ElicitResult[]) {
      const { result, made } = await createCartAnswering(answer);
      expect(result.isError).toBeFalsy();
      expect(structured(result).cart_id).toBeString();
      expect(made).toBe(1);
    }
  }, 30_000);
});
