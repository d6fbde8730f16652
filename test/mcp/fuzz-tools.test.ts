/**
 * Fuzzing every MCP tool from its own advertised input schema (test/helpers/mcp-fuzz.ts), deterministic (fixed
 * fast-check seeds): valid-looking arguments (with real products, carts, sessions and orders of the service mixed in)
 * and mutated ones (wrong types, missing required, nulls, edge numbers, long and nasty strings, deep nesting, unknown
 * properties, containers swapped, unknown ids), on every endpoint of the demo store, sessionless (the fast path) and
 * in an SDK session whose human approves every question (write tools run to the end). Plus protocol oddities.
 *
 * Spec: bad input always gets a structured tool error with the right code (or a JSON-RPC error of a protocol code for
 * a protocol-level problem), never an internal error, a stack trace or a hang. Every answer is judged by the same
 * oracle (`Oracle`); kinds of failure still unfixed are the known-list below, so a NEW kind fails the run.
 *
 * A bug hunt: FUZZ_SEED=<n> picks other seeds, FUZZ_SCALE=<k> multiplies every tool's generated cases (session 19:
 * seeds 7101-7107 at scale 3-5, ~298k calls, no violation), MCP_FUZZ_OUT=<file> writes the calls and violations.
 */
import { CallToolResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import {
  casesFor,
  encodeJson,
  KNOWN_KEYWORDS,
  leakIn,
  Oracle,
  pool,
  post,
  preview,
  PROTOCOL_CODES,
  sweepFor,
  type FuzzCase,
  type JsonSchema,
  type Pools,
  type RawAnswer,
  type Seeds,
  type ToolEntry,
  type Violation,
} from "../helpers/mcp-fuzz.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, DEMO_PRODUCT, structured, type Connected } from "./helpers.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
/**
 * Any call slower than this is a hang (the service's own slowest bound is the platform's 3 s). Generous: CI runs two
 * test files at once on 2 cores (review V3-2); a real hang never answers.
 */
const CALL_TIMEOUT_MS = 20_000;
const ENDPOINTS = [`/${DEMO}/mcp`, `/${DEMO}/mcp/discovery`, `/${DEMO}/mcp/customer`, `/${DEMO}/mcp/checkout`] as const;

/**
 * Kinds of failure found and kept (by design, or not fixed yet; docs/review.md "Session 11").
 * Each entry: the violation kind, and the tool (or "*"). A kind not listed here fails the test.
 */
const KNOWN: readonly { kind: string; tool: string; why: string }[] = [
  {
    kind: "INVALID_ARGUMENT after the human was asked",
    tool: "onx_create_return",
    why: "by design: with a new idempotency_key an amount above what is left (within the order's total) is the store's to refuse after the question (docs: 'without idempotency_key'); F2-6 (a NUL in reason) is fixed by the schema's no-NUL pattern",
  },
];

let srv: TestServer;
let key: TestKey;
let session: Connected;
let customerHeader: Record<string, string>;
let pools: Pools;
let seeds: Seeds = {};
let platform: ReturnType<typeof Bun.serve> | undefined;
const violations: Violation[] = [];
let calls = 0;
let slowest = 0;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  const admin = await login(srv);
  const token = await srv.json(`/api/v1/merchant/stores/${DEMO}/customer-tokens`, { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { customer_id: "cus_fuzz" } });
  customerHeader = { "x-customer-identity": token.body.data.token };
  session = await connect(srv, { headers: key.headers, elicit: accept });

  // the service's own values, so valid-looking arguments reach past the not-found branches
  const products = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND currency = 'USD' ORDER BY id LIMIT 4`;
  // variants are products.variants (jsonb): this read named a product_variants table that does not exist, and its
  // .catch left the variant_id pool empty
  const [withVariants] = await srv.db.sql<{ product_id: string; id: string }[]>`
    SELECT p.id AS product_id, v->>'id' AS id FROM products p, jsonb_array_elements(p.variants) v
    WHERE p.store_slug = 'demo-store' AND p.active AND v ? 'id' ORDER BY p.id, v->>'id' LIMIT 1`;
  const [elsewhere] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug <> 'demo-store' ORDER BY id LIMIT 1`;
  const productIds = [DEMO_PRODUCT, ...products.map((p) => p.id), ...(withVariants ? [withVariants.product_id] : []), ...(elsewhere ? [elsewhere.id] : [])];
  const carts: string[] = [];
  const sessions: string[] = [];
  for (let i = 0; i < 3; i++) {
    const cart = structured(await session.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    carts.push(cart.cart_id);
    if (i < 2) sessions.push(structured(await session.call("preview_checkout", { cart_id: cart.cart_id })).checkout_session_id);
  }
  const orders = [await placeOrder(srv, key, DEMO_PRODUCT), await placeOrder(srv, key, DEMO_PRODUCT)];
  const mandate = structured(await session.call("issue_payment_mandate", { max_amount: 1_000, currency: "USD" })).payment_mandate as string;
  // products only the seeds use (none of the pools' ids, which the generated calls bid on and buy)
  const own = await srv.db.sql<{ id: string }[]>`
    SELECT p.id FROM products p WHERE p.store_slug = 'demo-store' AND p.active AND p.in_stock AND p.currency = 'USD'
      AND (p.stock_quantity IS NULL OR p.stock_quantity > 50) AND p.variants = '[]'::jsonb
      AND NOT (p.id = ANY(${[...productIds]}::uuid[])) ORDER BY p.id LIMIT 4`;
  // a merchant platform's live stock endpoint for the fourth: no route or tool sets a product's platform_endpoint (the
  // catalog's integration), so it is written as test/mcp/errors.test.ts does
  platform = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ in_stock: true, quantity: 3 }) });
  await srv.db.sql`UPDATE products SET attributes = attributes || ${srv.db.sql.json({ platform_endpoint: `http://127.0.0.1:${platform.port}/items/1` })} WHERE id = ${own[3]!.id}`;
  seeds = { ...(await buildSeeds(own.map((p) => p.id))), ...(await platformSeeds(own[3]!.id)) };
  pools = {
    product_id: productIds,
    product_ids: [productIds.slice(0, 2), productIds],
    ids: [productIds],
    variant_id: withVariants ? [withVariants.id] : [],
    cart_id: [...carts, `cart_${carts[0]}`],
    checkout_session_id: sessions,
    order_id: orders,
    payment_method: ["MOCK", "tok_decline", "tok_fail", "tok_not_approved", "tok_needs_approval"],
    payment_mandate: [mandate],
    currency: ["USD", "EUR"],
    country_code: ["US", "DE"],
    postal_code: ["94107", "10115"],
    code: ["WELCOME10"],
    query: ["headphones", "lamp", "wireless headphones under 400"],
    question: ["headphones under 400 dollars", "the cheapest lamp"],
  };
}, 60_000);

/**
 * Coherent arguments for the tools whose success needs state (test/helpers/mcp-fuzz.ts Seeds), made through the tools
 * in the approving session (and REST for a pending order): each resource dedicated to the one tool that uses it up.
 */
async function buildSeeds([first, second, bidOn]: string[]): Promise<Seeds> {
  if (!first || !second || !bidOn) throw new Error("fuzz state: the demo store needs three more products in stock");
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = await session.call(name, args);
    if (r.isError) throw new Error(`fuzz state ${name}: ${JSON.stringify(r.structuredContent).slice(0, 300)}`);
    return structured(r);
  };
  const openCart = async (items = [{ product_id: first, quantity: 1 }]) => (await call("create_cart", { items })).cart_id as string;
  const previewed = async () => (await call("preview_checkout", { cart_id: await openCart() })).checkout_session_id as string;
  const n = <T>(k: number, f: () => Promise<T>) => Promise.all(Array.from({ length: k }, f));
  // a pending order: a checkout waiting for the buyer's approval at the sandbox processor
  const pendingOrder = async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: first, quantity: 1 }] } });
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() } });
    if (r.status !== 202) throw new Error(`fuzz state pending order: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cart.body.data.id}`;
    return o!.id;
  };
  const [shipTo, upd, ucpUpd, twoLine, coupon, cancel, complete, ucpComplete, pending] = await Promise.all([
    openCart(),
    n(3, () => openCart()),
    n(3, () => openCart()),
    n(3, () => openCart([{ product_id: first, quantity: 1 }, { product_id: second, quantity: 1 }])),
    n(3, () => openCart()),
    n(3, previewed),
    n(3, previewed),
    n(3, previewed),
    n(3, pendingOrder),
  ]);
  const items = [{ product_id: first, quantity: 1 }];
  return {
    create_cart: [{ items }],
    ucp_create_cart: [{ items }],
    get_shipping_rates: [
      { country_code: "US", postal_code: "94107", product_id: first, quantity: 2 },
      { country_code: "US", postal_code: "94107", cart_id: shipTo },
    ],
    update_cart_item: upd.map((cart_id) => ({ cart_id, product_id: first, quantity: 2 })),
    ucp_update_cart: ucpUpd.map((cart_id) => ({ cart_id, product_id: first, quantity: 2 })),
    remove_cart_item: twoLine.map((cart_id) => ({ cart_id, product_id: second })),
    apply_coupon: coupon.map((cart_id) => ({ cart_id, code: "WELCOME10" })),
    cancel_checkout: cancel.map((checkout_session_id) => ({ checkout_session_id })),
    complete_checkout: complete.map((checkout_session_id) => ({ checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" })),
    ucp_complete_checkout: ucpComplete.map((checkout_session_id) => ({ checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" })),
    cancel_order: pending.map((order_id) => ({ order_id, reason: "changed my mind" })),
    // a product in none of the seeded carts: an accepted bid reprices the key's carts, and their previewed sessions
    // then ask for reconfirmation (STATE_RECONFIRMATION_REQUIRED) instead of paying
    negotiate_price: [{ product_id: bidOn, bid_price: 1_000_000, currency: "USD" }, { product_id: bidOn, bid_price: 1, currency: "USD" }],
  };
}

/**
 * Seeds of the platform integration tools: the product `live` integrates the stub platform (its live stock, and the
 * attribute writes it takes, as in test/mcp/integrations-store.test.ts), in a cart of its own whose attribute is shared.
 */
async function platformSeeds(live: string): Promise<Seeds> {
  const cart = structured(await session.call("create_cart", { items: [{ product_id: live, quantity: 1 }] })).cart_id as string;
  const started = await session.call("start_attribute_verification", { cart_id: cart, attribute: "age_over_18", value: true });
  if (started.isError) throw new Error(`fuzz state start_attribute_verification: ${JSON.stringify(started.structuredContent).slice(0, 300)}`);
  return {
    check_live_availability: [{ product_id: live }],
    start_attribute_verification: [{ cart_id: cart, attribute: "age_over_21", value: true }],
    get_attribute_verification: [{ verification_reference: structured(started).verification_reference }],
  };
}

afterAll(async () => {
  void platform?.stop(true);
  await session?.close();
  await srv?.stop();
});

/** Per tool: calls judged, successes, and the error codes answered (FUZZ_COVERAGE=1 prints the table). */
const coverage = new Map<string, { calls: number; ok: number; codes: Map<string, number> }>();

function count(tool: string, body: unknown, label: string): void {
  if (label === "seeded") count(`${tool} (seeded)`, body, "");
  const c = coverage.get(tool) ?? { calls: 0, ok: 0, codes: new Map<string, number>() };
  coverage.set(tool, c);
  c.calls++;
  const m = body as { error?: { code?: number }; result?: { isError?: boolean; structuredContent?: { error?: { code?: string } } } } | undefined;
  if (m?.result && m.result.isError !== true) c.ok++;
  else {
    const code = m?.result?.structuredContent?.error?.code ?? (m?.error ? `rpc${m.error.code}` : "other");
    c.codes.set(code, (c.codes.get(code) ?? 0) + 1);
  }
}

function record(v: Omit<Violation, "args" | "answer"> & { args: unknown; answer: string }): void {
  violations.push({ ...v, args: preview(v.args), answer: v.answer.slice(0, 400) });
}

/** Judges one raw answer to a tools/call of a served tool with an arguments object. */
function judge(oracle: Oracle, endpoint: string, tool: string, c: FuzzCase, a: RawAnswer, opts: { anonymous?: boolean } = {}): void {
  calls++;
  slowest = Math.max(slowest, a.ms);
  count(tool, a.body, c.label);
  const base = { endpoint, tool, label: c.label, args: c.args };
  if (a.timedOut) return record({ ...base, kind: "no answer within 5 s", answer: "" });
  const leak = leakIn(a.text);
  if (leak) record({ ...base, kind: `leak: ${leak}`, answer: a.text });
  const rpcError = (a.body as { error?: { code?: number; data?: { code?: string } } } | undefined)?.error;
  // a caller without a credential is refused a tool that needs one before its arguments are read: HTTP 401, -32001
  if (opts.anonymous && a.status === 401 && rpcError?.code === -32001 && rpcError.data?.code === "unauthorized") return;
  if (a.status !== 200 && !(a.status === 400 && rpcError?.code === -32600)) record({ ...base, kind: `HTTP ${a.status}`, answer: a.text });
  const schemaInvalid = !oracle.inputValid(tool, c.args);
  for (const kind of oracle.judgeToolAnswer(tool, a.body, schemaInvalid)) record({ ...base, kind, answer: a.text });
}

async function listTools(path: string, headers: Record<string, string>): Promise<ToolEntry[]> {
  const a = await post(`${srv.url}${path}`, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }), headers, CALL_TIMEOUT_MS);
  expect(a.status).toBe(200);
  return (a.body as { result: { tools: ToolEntry[] } }).result.tools;
}

function headersFor(path: string): Record<string, string> {
  return path.endsWith("/customer") ? { ...key.headers, ...customerHeader } : key.headers;
}

const toolsCall = (id: number, name: string, args: unknown) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${encodeJson(args)}}}`;

test("the oracle refuses what the spec forbids: an internal error, -32603, a leak, a code's wrong remedy, success for bad arguments", async () => {
  const tools = await listTools(`/${DEMO}/mcp`, key.headers);
  const oracle = new Oracle(srv.url, tools);
  const toolError = (code: string, remedy: string) => ({
    jsonrpc: "2.0",
    id: 1,
    result: {
      content: [{ type: "text", text: `${code}: x` }],
      structuredContent: { error: { code, message: "x", remedy, retryable: code === "INTERNAL_ERROR", scope: "call", details: {}, reference: `${srv.url}/docs/errors#${code}` } },
      isError: true,
    },
  });
  expect(oracle.judgeToolAnswer("get_cart", toolError("CART_NOT_FOUND", "refresh_state"), false)).toEqual([]);
  expect(oracle.judgeToolAnswer("get_cart", toolError("INTERNAL_ERROR", "retry_with_backoff"), false)).toContain("INTERNAL_ERROR");
  expect(oracle.judgeToolAnswer("get_cart", toolError("CART_NOT_FOUND", "stop"), false)).toContain("CART_NOT_FOUND: remedy/retryable/scope differ from the code table");
  expect(oracle.judgeToolAnswer("get_cart", toolError("CART_NOT_FOUND", "refresh_state"), true)).toContain("schema-invalid arguments answered CART_NOT_FOUND");
  expect(oracle.judgeToolAnswer("get_cart", { jsonrpc: "2.0", id: 1, error: { code: -32603, message: "Internal error" } }, false)).toEqual(["JSON-RPC internal error -32603"]);
  expect(oracle.judgeToolAnswer("browse_categories", { jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "{}" }], structuredContent: {} } }, true)).toContain("schema-invalid arguments answered success");
  expect(leakIn("Error: boom\n    at handler (/work/main/gateway/mcp/dispatch.ts:201:9)")).toBe("stack frame");
  expect(leakIn('invalid byte sequence for encoding "UTF8": 0x00')).toBe("database text");
  expect(oracle.inputValid("get_product_details", { product_id: DEMO_PRODUCT })).toBe(true);
  expect(oracle.inputValid("get_product_details", { product_id: DEMO_PRODUCT, extra: 1 })).toBe(false);
}, 30_000);

test("every tool's input schema uses only keywords the fuzzer generates from", async () => {
  for (const path of ENDPOINTS) {
    for (const t of await listTools(path, headersFor(path))) {
      const unknown: string[] = [];
      const walk = (s: JsonSchema) => {
        for (const k of Object.keys(s)) if (!KNOWN_KEYWORDS.has(k)) unknown.push(`${t.name}: ${k}`);
        for (const v of Object.values(s.properties ?? {})) walk(v);
        if (s.items) walk(s.items);
        for (const b of s.anyOf ?? []) walk(b);
      };
      expect(t.inputSchema.type).toBe("object");
      walk(t.inputSchema);
      expect(unknown).toEqual([]);
    }
  }
}, 30_000);

test("sessionless calls of every tool on every endpoint, valid and mutated, get a result or a structured tool error", async () => {
  for (const path of ENDPOINTS) {
    const headers = headersFor(path);
    const tools = await listTools(path, headers);
    const oracle = new Oracle(srv.url, tools);
    const main = path === `/${DEMO}/mcp`;
    const jobs = tools.flatMap((t, ti) => [...(main ? sweepFor(t, pools, SEED + ti) : []), ...casesFor(t, pools, SEED + ti * 7, main ? 30 : 6, main ? 70 : 14, seeds)].map((c) => ({ t, c })));
    await pool(jobs, 6, async ({ t, c }, i) => judge(oracle, path, t.name, c, await post(`${srv.url}${path}`, toolsCall(i, t.name, c.args), headers, CALL_TIMEOUT_MS)));
  }
  expect(calls).toBeGreaterThan(5_000);
}, 120_000);

test("callers with less (no credential, a SANDBOX key of one scope, a key at another store) get the same kinds of answer", async () => {
  const sandbox = await createKey(srv, { scopes: ["search"], tier: "SANDBOX" });
  const [other] = await srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE slug <> ${DEMO} AND active ORDER BY slug LIMIT 1`.catch(() => srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE slug <> ${DEMO} ORDER BY slug LIMIT 1`);
  const callers: { path: string; headers: Record<string, string>; anonymous?: boolean }[] = [
    { path: `/${DEMO}/mcp`, headers: {}, anonymous: true },
    { path: `/${DEMO}/mcp/customer`, headers: { ...key.headers, "x-customer-identity": "not-a-token" } },
    { path: `/${DEMO}/mcp`, headers: sandbox.headers },
    { path: `/${other!.slug}/mcp`, headers: key.headers },
  ];
  for (const [ci, caller] of callers.entries()) {
    const tools = await listTools(caller.path, caller.headers);
    const oracle = new Oracle(srv.url, tools);
    const jobs = tools.flatMap((t, ti) => casesFor(t, pools, SEED + 500 * (ci + 1) + ti * 7, 4, 8).map((c) => ({ t, c })));
    await pool(jobs, 6, async ({ t, c }, i) =>
      judge(oracle, `${caller.path} (${caller.anonymous ? "anonymous" : caller.headers === sandbox.headers ? "SANDBOX" : "key"})`, t.name, c, await post(`${srv.url}${caller.path}`, toolsCall(i, t.name, c.args), caller.headers, CALL_TIMEOUT_MS), { anonymous: caller.anonymous }),
    );
  }
}, 120_000);

test("write tools in a session whose human approves run valid and mutated arguments to a result or a structured tool error, argument errors without a question", async () => {
  const tools = (await session.client.listTools()).tools as unknown as ToolEntry[];
  const oracle = new Oracle(srv.url, tools);
  const writes = tools.filter((t) => (t as { annotations?: { readOnlyHint?: boolean } }).annotations?.readOnlyHint !== true);
  const jobs = writes.flatMap((t, ti) => [...sweepFor(t, pools, SEED + ti), ...casesFor(t, pools, SEED + 1000 + ti * 7, 12, 12, seeds)].map((c) => ({ t, c })));
  expect(jobs.length).toBeGreaterThan(300);
  // one session per lane, each calling in turn, so every question to the human is the one call's
  const lanes = await Promise.all([0, 1, 2, 3].map(() => connect(srv, { headers: key.headers, elicit: accept })));
  try {
    const per = Math.ceil(jobs.length / lanes.length);
    await Promise.all(
      lanes.map(async (lane, li) => {
        for (const { t, c } of jobs.slice(li * per, (li + 1) * per)) {
          const started = performance.now();
          const before = lane.elicitations.length;
          let body: unknown;
          let timedOut = false;
          try {
            const result = await lane.client.request({ method: "tools/call", params: { name: t.name, arguments: JSON.parse(encodeJson(c.args)) } }, CallToolResultSchema, { timeout: CALL_TIMEOUT_MS });
            body = { jsonrpc: "2.0", id: 0, result };
          } catch (err) {
            if (err instanceof McpError && err.code === -32001 && /timed out/i.test(err.message)) timedOut = true;
            else if (err instanceof McpError) body = { jsonrpc: "2.0", id: 0, error: { code: err.code, message: err.message, data: err.data } };
            else body = `transport error: ${(err as Error).message}`; // an HTTP-level refusal the SDK could not read as JSON-RPC
          }
          const text = body === undefined ? "" : JSON.stringify(body);
          const endpoint = `/${DEMO}/mcp (session)`;
          judge(oracle, endpoint, t.name, c, { status: 200, text, body, ms: performance.now() - started, timedOut });
          // spec: argument checks come back without a question (docs/mcp-tools.md, Errors)
          const code = (body as { result?: { structuredContent?: { error?: { code?: string } } } } | undefined)?.result?.structuredContent?.error?.code;
          if ((code === "INVALID_ARGUMENT" || code === "MISSING_REQUIRED_ARGUMENT") && lane.elicitations.length > before) {
            record({ endpoint, tool: t.name, label: c.label, args: c.args, kind: `${code} after the human was asked`, answer: text });
          }
        }
      }),
    );
  } finally {
    await Promise.all(lanes.map((l) => l.close()));
  }
}, 120_000);

/** A protocol-level oddity: the answer must be a JSON-RPC error of one of `codes` (or, for `result`, a tool error). */
async function oddity(label: string, body: string, want: { codes?: number[]; toolCode?: string; status?: number[] }, headers = key.headers): Promise<void> {
  const a = await post(`${srv.url}/${DEMO}/mcp`, body, headers, CALL_TIMEOUT_MS);
  calls++;
  slowest = Math.max(slowest, a.ms);
  const base = { endpoint: `/${DEMO}/mcp`, tool: "(protocol)", label, args: body.length > 300 ? `${body.slice(0, 300)}…(${body.length} bytes)` : body };
  if (a.timedOut) return record({ ...base, kind: "no answer within 5 s", answer: "" });
  const leak = leakIn(a.text);
  if (leak) record({ ...base, kind: `leak: ${leak}`, answer: a.text });
  if (want.status && !want.status.includes(a.status)) record({ ...base, kind: `${label}: HTTP ${a.status}`, answer: a.text });
  const m = a.body as { jsonrpc?: string; error?: { code?: number }; result?: { isError?: boolean; structuredContent?: { error?: { code?: string } } } } | undefined;
  if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return record({ ...base, kind: `${label}: answer is not JSON-RPC`, answer: a.text });
  if (m.error?.code === -32603) return record({ ...base, kind: "JSON-RPC internal error -32603", answer: a.text });
  if (m.error && !PROTOCOL_CODES.has(m.error.code ?? 0)) return record({ ...base, kind: `${label}: JSON-RPC code ${m.error.code} is not a protocol code`, answer: a.text });
  if (want.codes && !(m.error && want.codes.includes(m.error.code!))) return record({ ...base, kind: `${label}: not JSON-RPC ${want.codes.join("/")}`, answer: a.text });
  if (want.toolCode && m.result?.structuredContent?.error?.code !== want.toolCode) record({ ...base, kind: `${label}: not ${want.toolCode}`, answer: a.text });
}

test("protocol oddities get JSON-RPC errors of protocol codes, unknown tools TOOL_NOT_FOUND", async () => {
  const call = (params: string) => `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":${params}}`;
  for (const name of ["", "launch_rockets", "SEARCH_PRODUCTS", "search_products ", "__proto__", "constructor", "toString", "hasOwnProperty", "\u0000", "\ud800", "x".repeat(100_000)]) {
    await oddity(`unknown tool ${JSON.stringify(name.slice(0, 12))}`, call(JSON.stringify({ name, arguments: {} })), { toolCode: "TOOL_NOT_FOUND", status: [200] });
  }
  await oddity("arguments missing on a tool with required arguments", call(`{"name":"get_cart"}`), { toolCode: "MISSING_REQUIRED_ARGUMENT", status: [200] });
  for (const args of ["null", "[]", `"x"`, "42", "true", `[{"query":"a"}]`]) {
    await oddity(`arguments ${args}`, call(`{"name":"search_products","arguments":${args}}`), { codes: [-32602], status: [200, 400] });
  }
  for (const params of ["{}", `{"name":42}`, `{"name":null}`, `{"name":["search_products"]}`, `{"arguments":{}}`]) {
    await oddity(`params ${params}`, call(params), { codes: [-32602, -32600], status: [200, 400] });
  }
  await oddity("params missing", `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, { codes: [-32602, -32600], status: [200, 400] });
  for (const params of ["null", "[]", `"x"`]) await oddity(`params ${params}`, call(params), { codes: [-32600, -32602], status: [400] });
  for (const id of ["1.5", "null", "{}", "[]", "true"]) {
    await oddity(`id ${id}`, `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"browse_categories","arguments":{}}}`, { codes: [-32600], status: [400] });
  }
  await oddity("unknown method", `{"jsonrpc":"2.0","id":1,"method":"tools/explode","params":{}}`, { codes: [-32601], status: [200] });
  await oddity("no jsonrpc member", `{"id":1,"method":"tools/list","params":{}}`, { codes: [-32600], status: [400] });
  await oddity("not JSON", `{"jsonrpc":"2.0","id":1,`, { codes: [-32700], status: [400] });
  await oddity("a batch", `[${call(`{"name":"browse_categories","arguments":{}}`)}]`, { codes: [-32600], status: [400] });
  await oddity("a 10,001-item array argument", call(`{"name":"ucp_lookup_catalog","arguments":{"ids":${JSON.stringify(Array(10_001).fill(DEMO_PRODUCT))}}}`), { codes: [-32600], status: [400] });
  await oddity("an argument nested 200 deep", call(`{"name":"search_products","arguments":{"query":${"[".repeat(200)}${"]".repeat(200)}}}`), { toolCode: "INVALID_ARGUMENT", status: [200] });
  await oddity("params nested 200 deep", call(`{"name":"search_products","arguments":{},"_meta":${'{"a":'.repeat(200)}1${"}".repeat(200)}}`), { codes: [-32600], status: [400] });
  await oddity("a 900 kB string argument", call(JSON.stringify({ name: "search_products", arguments: { query: "q".repeat(900_000) } })), { toolCode: "INVALID_ARGUMENT", status: [200] });
  await oddity("a message over the 1 MiB body limit", call(JSON.stringify({ name: "search_products", arguments: { query: "q".repeat(1_100_000) } })), { codes: [-32600], status: [413] });
  await oddity("a strange progressToken", call(`{"name":"browse_categories","arguments":{},"_meta":{"progressToken":{"x":1}}}`), { status: [200, 400] });
}, 60_000);

test("the same call sent twice at once gets two conforming answers", async () => {
  const tools = (await session.client.listTools()).tools as unknown as ToolEntry[];
  const oracle = new Oracle(srv.url, tools);
  const cart = structured(await session.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = structured(await session.call("preview_checkout", { cart_id: cart.cart_id }));
  const same: [string, Record<string, unknown>][] = [
    ["search_products", { query: "headphones" }],
    ["create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }],
    ["update_cart_item", { cart_id: cart.cart_id, product_id: DEMO_PRODUCT, quantity: 3 }],
    ["complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }],
    ["cancel_order", { order_id: pools.order_id![0] }],
    ["provision_wallet", {}],
    ["get_wallet", {}],
  ];
  for (const [name, args] of same) {
    const one = () =>
      session.client
        .request({ method: "tools/call", params: { name, arguments: args } }, CallToolResultSchema, { timeout: CALL_TIMEOUT_MS })
        .then((result) => ({ jsonrpc: "2.0", id: 0, result }))
        .catch((err: unknown) => (err instanceof McpError ? { jsonrpc: "2.0", id: 0, error: { code: err.code, message: err.message } } : Promise.reject(err)));
    const started = performance.now();
    const answers = await Promise.all([one(), one()]);
    for (const body of answers) judge(oracle, `/${DEMO}/mcp (session, twice at once)`, name, { label: "twice at once", args }, { status: 200, text: JSON.stringify(body), body, ms: performance.now() - started, timedOut: false });
    // sessionless too (fast path)
    const raw = await Promise.all([0, 1].map((i) => post(`${srv.url}/${DEMO}/mcp`, toolsCall(i, name, args), key.headers, CALL_TIMEOUT_MS)));
    for (const a of raw) judge(oracle, `/${DEMO}/mcp (twice at once)`, name, { label: "twice at once", args }, a);
  }
}, 60_000);

test("the tools' success paths are reached: every seeded tool succeeded, and all but a few in all", () => {
  const succeeded = (t: string) => (coverage.get(t)?.ok ?? 0) > 0;
  expect(Object.keys(seeds).filter((t) => !succeeded(t))).toEqual([]);
  const tools = [...coverage.keys()].filter((t) => !t.endsWith(" (seeded)"));
  // 50 of 50 when written (FUZZ_COVERAGE=1 prints the table); a tool reached only by generated values may miss
  expect(tools.filter(succeeded).length).toBeGreaterThanOrEqual(tools.length - 2);
});

test("no kind of failure outside the known-list", () => {
  if (process.env.FUZZ_COVERAGE) {
    const tools = [...coverage].filter(([t]) => !t.endsWith(" (seeded)")).sort(([a], [b]) => a.localeCompare(b));
    const never = tools.filter(([, c]) => c.ok === 0);
    console.log(`mcp coverage: ${tools.length - never.length}/${tools.length} tools succeeded at least once (${calls} calls)`);
    for (const [t, c] of tools) {
      const codes = [...c.codes].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, n]) => `${k}×${n}`).join(" ");
      console.log(`  ${c.ok === 0 ? "NEVER" : "     "} ${t.padEnd(32)} ${String(c.ok).padStart(5)}/${String(c.calls).padEnd(5)} ${codes}`);
      const s = coverage.get(`${t} (seeded)`);
      if (s) console.log(`        seeded: ${s.ok}/${s.calls} ${[...s.codes].map(([k, n]) => `${k}×${n}`).join(" ")}`);
    }
  }
  const known = (v: Violation) => KNOWN.some((k) => k.kind === v.kind && (k.tool === "*" || k.tool === v.tool));
  const fresh = violations.filter((v) => !known(v));
  const byKind = new Map<string, Violation[]>();
  for (const v of violations) {
    const k = `${v.kind} | ${v.tool}`;
    byKind.set(k, [...(byKind.get(k) ?? []), v]);
  }
  if (process.env.MCP_FUZZ_OUT) void Bun.write(process.env.MCP_FUZZ_OUT, JSON.stringify({ calls, slowestMs: Math.round(slowest), violations }, null, 1));
  if (byKind.size > 0) {
    console.log(`mcp fuzz: ${calls} calls, slowest ${Math.round(slowest)} ms, ${violations.length} violations in ${byKind.size} kinds:`);
    for (const [k, vs] of byKind) console.log(`  ${vs.length}× ${k}\n      e.g. ${vs[0]!.endpoint} ${vs[0]!.label}: ${vs[0]!.args}\n      → ${vs[0]!.answer.slice(0, 300)}`);
  }
  expect(fresh.map((v) => `${v.kind} | ${v.tool} | ${v.label} | ${v.args}`)).toEqual([]);
});
