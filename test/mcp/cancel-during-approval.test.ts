/**
 * A write tool's question to the human follows the tool call's cancellation (audit A5 H1). The SDK client's request
 * timeout (60 s by default) or a host's stop button sends `notifications/cancelled`; the question is withdrawn and,
 * even if the human's client answers "accept" afterwards, nothing is paid. A client that asks for progress
 * (`onprogress` + `resetTimeoutOnProgress`) gets `notifications/progress` while the human thinks, so it keeps waiting.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ErrorCode, McpError, type CallToolResult, type Progress } from "@modelcontextprotocol/sdk/types.js";
import type { McpGateway } from "../../gateway/mcp/server.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, DEMO_PRODUCT } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let client: Client;
/** How long the human thinks before accepting a question (0: at once). */
let humanDelayMs = 0;
/** Every question the client got: whether the server withdrew it (the handler's signal) and whether it was answered. */
const questions: { message: string; withdrawn: boolean; answered: boolean }[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  client = new Client({ name: "acs-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
    const q = { message: (req.params as { message: string }).message, withdrawn: false, answered: false };
    questions.push(q);
    extra.signal.addEventListener("abort", () => (q.withdrawn = true));
    if (humanDelayMs > 0) await Bun.sleep(humanDelayMs);
    q.answered = true;
    return { action: "accept", content: { approve: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/${DEMO}/mcp`), { requestInit: { headers: key.headers } }));
  await client.listTools();
}, 60_000);
afterAll(async () => {
  await client?.close();
  await srv?.stop();
});

const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const data = (r: CallToolResult) => r.structuredContent as any;

async function previewed(): Promise<string> {
  humanDelayMs = 0;
  const cart = data(await call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = data(await call("preview_checkout", { cart_id: cart.cart_id }));
  expect(pv.checkout_session_id).toMatch(/^cs_/);
  return pv.checkout_session_id;
}

test("complete_checkout cancelled by the client's timeout while the human is asked withdraws the question and pays nothing, though the human accepts later", async () => {
  const cs = await previewed();
  const args = { checkout_session_id: cs, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" };
  humanDelayMs = 1500;
  const asked = questions.length;
  const err = await client.callTool({ name: "complete_checkout", arguments: args }, undefined, { timeout: 500 }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  expect((err as McpError).code).toBe(ErrorCode.RequestTimeout);
  await Bun.sleep(2500); // the human has answered "accept" by now
  const q = questions[asked]!;
  expect(q.message).toContain("USD");
  expect(q.answered).toBe(true);
  expect(q.withdrawn).toBe(true); // the server sent notifications/cancelled for its elicitation/create
  const st = data(await call("get_checkout_status", { checkout_session_id: cs }));
  expect(st.checkout_status).toBe("READY_FOR_PAYMENT");
  expect(st.order_id ?? null).toBeNull();

  // a retry with the same key asks again (the first question is gone) and pays once
  humanDelayMs = 0;
  const done = await call("complete_checkout", args);
  expect(done.isError).toBeFalsy();
  expect(data(done).status).toBe("COMPLETED");
  expect(questions.length).toBe(asked + 2);
  const after = data(await call("get_checkout_status", { checkout_session_id: cs }));
  expect(after.checkout_status).toBe("COMPLETED");
}, 60_000);

test("a host's stop button (the call's AbortSignal) during the payment question withdraws it and pays nothing", async () => {
  const cs = await previewed();
  humanDelayMs = 1500;
  const asked = questions.length;
  const stop = new AbortController();
  const args = { checkout_session_id: cs, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" };
  const pending = client.callTool({ name: "complete_checkout", arguments: args }, undefined, { signal: stop.signal }).then(
    () => null,
    (e: unknown) => e,
  );
  while (questions.length === asked) await Bun.sleep(20);
  stop.abort("the user pressed stop");
  expect(await pending).not.toBeNull(); // the call rejected with the abort reason
  await Bun.sleep(2500);
  expect(questions[asked]!.withdrawn).toBe(true);
  expect(questions[asked]!.answered).toBe(true);
  humanDelayMs = 0;
  const st = data(await call("get_checkout_status", { checkout_session_id: cs }));
  expect(st.checkout_status).toBe("READY_FOR_PAYMENT");
  expect(st.order_id ?? null).toBeNull();
}, 60_000);

test("a client asking for progress gets notifications/progress while the human thinks and, with resetTimeoutOnProgress, outlasts its timeout", async () => {
  const gw = srv.running.services.extras.get("mcpGateway") as McpGateway;
  const every = gw.confirmProgressEveryMs;
  gw.confirmProgressEveryMs = 200;
  try {
    const cs = await previewed();
    humanDelayMs = 1500;
    const progress: Progress[] = [];
    const r = (await client.callTool({ name: "complete_checkout", arguments: { checkout_session_id: cs, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" } }, undefined, {
      timeout: 700,
      resetTimeoutOnProgress: true,
      onprogress: (p) => progress.push(p),
    })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(data(r).status).toBe("COMPLETED");
    expect(progress.length).toBeGreaterThanOrEqual(5);
    expect(progress[0]).toMatchObject({ progress: 1, message: "waiting for the human's approval" });
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
  } finally {
    gw.confirmProgressEveryMs = every;
    humanDelayMs = 0;
  }
}, 60_000);
