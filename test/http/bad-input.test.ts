/**
 * Bad-input sweep: every operation of /api/v1/openapi.json gets malformed requests with valid credentials
 * (invalid JSON, non-object bodies, wrong types, missing required fields, 100 kB strings, out-of-range and
 * non-finite numbers, unknown enum values, hostile path and query parameters). The standard: a 4xx with the
 * error envelope, the transparency headers and X-Request-Id — never a 5xx, a stack trace or a hang.
 *
 * A mutation is "strict" when it breaks the published schema (the answer must be 4xx); a mutation the schema
 * does not forbid (a long string where no maxLength is declared) may succeed, but must never be a 5xx.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  format?: string;
  pattern?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  const?: unknown;
  default?: unknown;
};
interface Param {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  method: string;
  path: string;
  params: Param[];
  body?: Schema;
  security: string[];
}
interface Probe {
  op: Operation;
  label: string;
  url: string;
  /** raw request body text (already serialised) */
  body?: string;
  strict: boolean;
  /** The spec's batch ingestion (PUT catalog, PATCH inventory, POST orders) validates each item on its own: a bad
   *  item is refused in the answer's `rejected` list, nothing of it written, and the call answers 2xx for the rest. */
  perItem?: boolean;
}
interface Failure {
  probe: string;
  status: number;
  problem: string;
  body: string;
}

const HUGE = "x".repeat(100 * 1024);
/** Query strings travel in the request line: Bun refuses a 100 kB one itself (431, before our code); 4 kB reaches us. */
const LONG_QUERY = "x".repeat(4 * 1024);
const ZERO_UUID = "00000000-0000-4000-8000-000000000000";
/** Real ids, so a mutated field is checked where the request would otherwise succeed, not only at "not found". */
const REAL: { productId: string; cartId: string } = { productId: ZERO_UUID, cartId: ZERO_UUID };

let srv: TestServer;
let key: TestKey;
let bearer: string;
let operations: Operation[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  bearer = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: bearer, name: "bad-input sweep" });
  const found = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "a", filters: { inStock: true } } });
  REAL.productId = found.body?.data?.products?.[0]?.id ?? ZERO_UUID;
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: REAL.productId, quantity: 1 }] } });
  REAL.cartId = cart.body?.data?.id ?? ZERO_UUID;
  const doc = (await srv.json("/api/v1/openapi.json")).body as {
    paths: Record<string, Record<string, { parameters?: Param[]; requestBody?: { content: Record<string, { schema?: Schema }> }; security?: Record<string, unknown>[] }>>;
  };
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      operations.push({
        method: method.toUpperCase(),
        path,
        params: op.parameters ?? [],
        body: op.requestBody ? (op.requestBody.content["application/json"]?.schema ?? {}) : undefined,
        security: (op.security ?? []).flatMap((s) => Object.keys(s)),
      });
    }
  }
}, 60_000);

afterAll(async () => {
  await srv?.stop();
});

/** The schema's own type, looking through anyOf/oneOf (the first branch that names one). */
function typeOf(s: Schema | undefined): string | undefined {
  if (!s) return undefined;
  if (typeof s.type === "string") return s.type;
  if (Array.isArray(s.type)) return s.type.find((t) => t !== "null");
  for (const b of s.anyOf ?? s.oneOf ?? []) {
    const t = typeOf(b);
    // Elysia's numeric coercion shows up as anyOf [string(format integer), integer]: the number is the real type
    if (t && t !== "string") return t;
  }
  return (s.anyOf ?? s.oneOf)?.map(typeOf).find(Boolean);
}

/** A value the schema accepts (as far as a generator can tell without knowing the data). */
function sample(s: Schema | undefined, name = ""): unknown {
  if (!s) return "x";
  if (s.const !== undefined) return s.const;
  if (s.enum?.length) return s.enum[0];
  if (s.default !== undefined && s.default !== 0) return s.default;
  switch (typeOf(s)) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const r of s.required ?? []) out[r] = sample(s.properties?.[r], r);
      return out;
    }
    case "array":
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => sample(s.items, name));
    case "integer":
      return Math.max(1, s.minimum ?? 1);
    case "number":
      return Math.max(1, s.minimum ?? 1);
    case "boolean":
      return true;
    default: {
      if (/^product_?id$/i.test(name)) return REAL.productId;
      if (/^cart_?id$/i.test(name)) return REAL.cartId;
      if (/slug$/i.test(name)) return "demo-store";
      if (s.format === "uuid") return ZERO_UUID;
      if (s.format === "uri" || /url/i.test(name)) return "https://example.com/x";
      if (s.format === "email" || /email/i.test(name)) return "nobody@example.com";
      if (/currency/i.test(name)) return "EUR";
      if (/country/i.test(name)) return "DE";
      const min = s.minLength ?? 1;
      return "a".repeat(Math.max(min, 3)).slice(0, s.maxLength ?? 1000);
    }
  }
}

/** Values of the wrong JSON type for a schema of type `t`. */
function wrongTypes(t: string | undefined): unknown[] {
  switch (t) {
    case "string":
      return [12345, { a: 1 }, ["a"], true];
    case "integer":
    case "number":
      return ["abc", { a: 1 }, [1], true];
    case "boolean":
      return [{ a: 1 }, [true], 17];
    case "array":
      return ["abc", 7, { a: 1 }];
    case "object":
      return ["abc", 7, [1], true];
    default:
      return [];
  }
}

function pathFor(op: Operation, override: Record<string, string> = {}): string {
  let p = op.path;
  for (const prm of op.params.filter((x) => x.in === "path")) {
    const v = override[prm.name] ?? encodeURIComponent(String(sample(prm.schema, prm.name)));
    p = p.replace(`{${prm.name}}`, v);
  }
  return p;
}

function queryFor(op: Operation, override: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  for (const prm of op.params.filter((x) => x.in === "query")) {
    if (prm.name in override) q.set(prm.name, override[prm.name]!);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** Hostile path-parameter values (already URL-encoded where needed). */
const PATH_VALUES: [string, string][] = [
  ["not a uuid", "not-a-uuid"],
  ["5,000 characters long", "a".repeat(5000)],
  ["a NUL byte", "abc%00def"],
  ["only a NUL byte", "%00"],
  ["an encoded ../ traversal", "..%2F..%2Fetc%2Fpasswd"],
  ["an encoded dot-dot", "%2e%2e"],
  ["SQL metacharacters", "1'%20OR%20'1'%3D'1"],
  ["non-ASCII and emoji", "%C3%A9%F0%9F%92%A5"],
];

/**
 * Body fields the baseline request does not read, so a malformed value of theirs may be ignored: POST /agent/checkout's
 * `x402_config` is checked only on the x402 rail (gateway/rest/checkout.ts: "a card checkout is not refused for a
 * config it does not use"; the baseline pays by card). Its wrong-type probe passed while another probe had already
 * completed the baseline's cart (409), and failed in session 22's CI when it reached the cart first (200).
 */
const UNREAD_BY_THE_BASELINE: readonly string[] = ["x402_config"];

/** The ingestion batches whose items are validated one by one (spec: "validated per item; the answer lists per-item errors"). */
const PER_ITEM_BATCHES: ReadonlySet<string> = new Set([
  "PUT /api/v1/merchant/stores/{slug}/catalog products",
  "PATCH /api/v1/merchant/stores/{slug}/inventory items",
  "POST /api/v1/merchant/stores/{slug}/orders orders",
]);

/** A batch's answer that refused its one item (index 0) and wrote nothing. */
function refusedTheItem(text: string): boolean {
  try {
    const data = (JSON.parse(text) as { data?: Record<string, unknown> }).data ?? {};
    const rejected = data.rejected as { index?: number }[] | undefined;
    const written = [data.accepted, data.updated].filter((n) => typeof n === "number") as number[];
    return rejected?.length === 1 && rejected[0]!.index === 0 && written.length > 0 && written.every((n) => n === 0);
  } catch {
    return false;
  }
}

function probesFor(op: Operation): Probe[] {
  const probes: Probe[] = [];
  const base = pathFor(op);
  const add = (label: string, url: string, body: string | undefined, strict: boolean) =>
    probes.push({ op, label: `${op.method} ${op.path}: ${label}`, url, body, strict });

  // path parameters: the baseline value of every other parameter, a hostile value in this one
  for (const prm of op.params.filter((x) => x.in === "path")) {
    for (const [what, v] of PATH_VALUES) {
      add(`path ${prm.name} is ${what}`, pathFor(op, { [prm.name]: v }), op.body ? JSON.stringify(sample(op.body)) : undefined, true);
    }
  }
  // query parameters
  for (const prm of op.params.filter((x) => x.in === "query")) {
    const t = typeOf(prm.schema);
    const bad: [string, string, boolean][] = [
      ["4 kB long", LONG_QUERY, !!(prm.schema?.enum || prm.schema?.maxLength || t === "integer" || t === "number" || prm.name === "days")],
      ["a NUL byte", "a\u0000b", !!(prm.schema?.enum || t === "integer" || t === "number" || prm.name === "days")],
    ];
    if (prm.schema?.enum || prm.name === "days") bad.push(["an unknown enum value", "NOT_A_VALUE", true]);
    if (t === "integer" || t === "number" || prm.name === "days") {
      bad.push(["negative", "-1", true], ["NaN", "NaN", true], ["1e309", "1e309", true], ["not a number", "abc", true]);
    }
    for (const [what, v, strict] of bad) add(`query ${prm.name} is ${what}`, base + queryFor(op, { [prm.name]: v }), op.body ? JSON.stringify(sample(op.body)) : undefined, strict);
  }
  if (!op.body) {
    // no declared body: junk must not break it (it may be ignored)
    add("an undeclared invalid JSON body", base, '{"a":', false);
    return probes;
  }

  const schema = op.body;
  const isObject = typeOf(schema) === "object";
  const baseline = (sample(schema) ?? {}) as Record<string, unknown>;
  add("invalid JSON", base, '{"a": ', true);
  add("truncated JSON with a huge string", base, `{"x": "${HUGE}`, true);
  add("NaN as a bare token", base, '{"a": NaN}', true);
  for (const [what, raw] of [
    ["a JSON array", "[]"],
    ["a JSON array of objects", '[{"a":1}]'],
    ["a JSON number", "42"],
    ["JSON null", "null"],
    ["a JSON string", '"text"'],
    ["JSON true", "true"],
  ] as const) {
    add(`the body is ${what}`, base, raw, isObject);
  }
  add("an empty object", base, "{}", isObject && (schema.required?.length ?? 0) > 0);

  const props = Object.entries(schema.properties ?? {});
  for (const r of schema.required ?? []) {
    const without = { ...baseline };
    delete without[r];
    add(`required ${r} is missing`, base, JSON.stringify(without), true);
  }
  const visit = (prefix: string, holder: Record<string, unknown>, entries: [string, Schema][], root: Record<string, unknown>) => {
    for (const [name, ps] of entries) {
      const label = prefix + name;
      const t = typeOf(ps);
      const withValue = (v: unknown): string => {
        const copy = structuredClone(root);
        const target = prefix ? (getAt(copy, prefix.slice(0, -1).split(".")) as Record<string, unknown>) : copy;
        target[name] = v;
        return JSON.stringify(copy);
      };
      const withRaw = (raw: string): string => withValue("__RAW__").replace('"__RAW__"', raw);
      for (const v of wrongTypes(t)) add(`${label} has the wrong type (${JSON.stringify(v)})`, base, withValue(v), true);
      add(`${label} is null`, base, withValue(null), !!t && !(Array.isArray(ps.type) && ps.type.includes("null")));
      if (t === "string" || t === undefined) {
        const strict = t === "string" && ((ps.maxLength ?? Infinity) < HUGE.length || !!ps.enum || !!ps.format || !!ps.pattern);
        add(`${label} is a 100 kB string`, base, withValue(HUGE), strict);
        add(`${label} contains a NUL byte`, base, withValue("a\u0000b"), !!ps.enum || !!ps.format || !!ps.pattern);
      }
      if (ps.enum) add(`${label} is an unknown enum value`, base, withValue("NOT_A_VALUE"), true);
      if (t === "integer" || t === "number") {
        const lower = ps.minimum ?? ps.exclusiveMinimum;
        add(`${label} is negative`, base, withValue(-1), lower !== undefined && lower >= 0);
        add(`${label} is 1e309 (Infinity)`, base, withRaw("1e309"), true);
        add(`${label} is -1e309`, base, withRaw("-1e309"), true);
        add(`${label} is a huge integer`, base, withRaw("123456789012345678901234567890"), ps.maximum !== undefined);
        if (t === "integer") add(`${label} is fractional`, base, withValue(1.5), true);
      }
      if (t === "array") {
        add(`${label} holds 10,000 elements`, base, withValue(Array.from({ length: 10_000 }, () => sample(ps.items))), false);
        if (ps.items && typeOf(ps.items)) {
          add(`${label} holds an element of the wrong type`, base, withValue([wrongTypes(typeOf(ps.items))[0]]), true);
          if (!prefix && PER_ITEM_BATCHES.has(`${op.method} ${op.path} ${name}`)) probes[probes.length - 1]!.perItem = true;
        }
      }
      if (t === "object" && ps.properties && !prefix) {
        const nested = (baseline[name] ?? sample(ps, name) ?? {}) as Record<string, unknown>;
        const root2 = { ...baseline, [name]: nested };
        visit(`${name}.`, nested, Object.entries(ps.properties), root2);
      }
    }
  };
  visit("", baseline, props, baseline);
  // A field its route documents as read only on another path than the baseline's is not refused here: the probe only
  // checks that nothing breaks (a 5xx, a missing header), and a 200 is as right as a 4xx.
  if (op.method === "POST" && op.path === "/api/v1/agent/checkout") {
    for (const p of probes) if (UNREAD_BY_THE_BASELINE.some((f) => p.label.startsWith(`${op.method} ${op.path}: ${f} `))) p.strict = false;
  }
  return probes;
}

function getAt(obj: Record<string, unknown>, path: string[]): unknown {
  let cur: unknown = obj;
  for (const k of path) cur = (cur as Record<string, unknown>)[k];
  return cur;
}

function headersFor(op: Operation): Record<string, string> {
  const h: Record<string, string> = { "content-type": "application/json" };
  if (op.security.includes("agentApiKey") || op.path.startsWith("/api/v1/agent/")) h["x-agent-api-key"] = key.key;
  if (op.security.includes("bearer") || /\/(merchant|admin)\//.test(op.path)) h.authorization = `Bearer ${bearer}`;
  return h;
}

async function run(p: Probe): Promise<Failure | undefined> {
  const fail = (status: number, problem: string, body = ""): Failure => ({ probe: p.label, status, problem, body: body.slice(0, 300) });
  let res: Response;
  try {
    res = await fetch(srv.url + p.url, {
      method: p.op.method,
      headers: headersFor(p.op),
      body: p.op.method === "GET" || p.op.method === "DELETE" ? undefined : p.body,
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    return fail(0, `no answer (${(err as Error).message})`);
  }
  const text = await res.text();
  // the spec: search-by-image is reserved and always answers 501 (an error envelope)
  const reserved = p.op.path === "/api/v1/agent/search-by-image" && res.status === 501;
  if (res.status >= 500 && !reserved) return fail(res.status, "server error", text);
  if (p.strict && res.status < 400 && !(p.perItem && refusedTheItem(text))) return fail(res.status, "malformed request was accepted", text);
  for (const h of ["x-request-id", "x-agent-commerce", "x-initiated-by"]) if (!res.headers.get(h)) return fail(res.status, `missing ${h}`, text);
  if (p.op.method !== "GET" && !res.headers.get("x-ai-act-transparency")) return fail(res.status, "missing x-ai-act-transparency", text);
  if (/\bat .+:\d+:\d+\)?$/m.test(text) || text.includes("node_modules")) return fail(res.status, "stack trace in the body", text);
  if (res.status >= 400) {
    const problem = errorShapeProblem(p.op.path, res, text);
    if (problem) return fail(res.status, problem, text);
  }
  return undefined;
}

/**
 * Our envelope, except where another protocol's clients read the answer: the OAuth consent page is HTML for a
 * browser, and the ACP/UCP bridge answers in those protocols' own error objects (docs/decisions.md).
 */
function errorShapeProblem(path: string, res: Response, text: string): string | undefined {
  if (path === "/api/v1/oauth/authorize" && (res.headers.get("content-type") ?? "").startsWith("text/html")) return undefined;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text);
  } catch {
    return "error body is not JSON";
  }
  if (path.startsWith("/api/v1/agent/acp/") && typeof body.type === "string" && typeof body.code === "string" && typeof body.message === "string") return undefined;
  if (path.startsWith("/api/v1/agent/ucp/") && Array.isArray(body.messages) && (body.messages as { type?: string }[]).some((m) => m.type === "error")) return undefined;
  if (body.success !== false || typeof body.error !== "string" || typeof body.code !== "string") return "not the error envelope";
  return undefined;
}

async function sweep(probes: Probe[], parallel = 16): Promise<Failure[]> {
  const failures: Failure[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < probes.length) {
        const f = await run(probes[next++]!);
        if (f) failures.push(f);
      }
    }),
  );
  return failures;
}

/**
 * Findings in files this suite's author may not edit, reported to their owners in docs/review.md. Each group is a
 * `test.failing` below: it passes while the finding reproduces and fails once it is fixed — then delete the entry
 * here so those probes join the main sweep.
 */
// Fixed since the review: non-object `filters` and settings bodies (the gateway now normalises with TypeBox,
// which refuses a wrong type instead of turning it into {}), NUL bytes reaching Postgres (class 22 data errors
// are answered 400 by the gateway and the actor host). New findings go here until fixed.
const KNOWN_OPEN: { finding: string; match: RegExp }[] = [];

let failures: Failure[] | undefined;
let probeCount = 0;

describe("malformed requests", () => {
  test("the OpenAPI document lists the operations the sweep covers", () => {
    expect(operations.length).toBeGreaterThan(60);
    expect(operations.some((o) => o.path === "/api/v1/agent/checkout" && o.method === "POST")).toBe(true);
  });

  test("every operation answers every malformed request with a 4xx error envelope, never a 5xx", async () => {
    const probes = operations.flatMap(probesFor);
    probeCount = probes.length;
    expect(probes.length).toBeGreaterThan(1000);
    failures = await sweep(probes);
    const unexpected = failures.filter((f) => !KNOWN_OPEN.some((k) => k.match.test(f.probe)));
    if (unexpected.length) console.error(`${unexpected.length} of ${probes.length} probes failed:\n` + unexpected.map((f) => `  ${f.probe} -> ${f.status} ${f.problem} ${f.body}`).join("\n"));
    expect(unexpected).toEqual([]);
  }, 120_000);

  for (const k of KNOWN_OPEN) {
    test.failing(`known open finding, still reproduces: ${k.finding}`, () => {
      expect(failures).toBeDefined();
      expect(failures!.filter((f) => k.match.test(f.probe))).toEqual([]);
    });
  }

  test("a 100 kB query string is refused with a 4xx before it reaches a route", async () => {
    const res = await fetch(`${srv.url}/api/v1/merchant/stores/demo-store/refunds?status=${"x".repeat(100 * 1024)}`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  test("the server still answers normally after the sweep", async () => {
    expect(probeCount).toBeGreaterThan(1000);
    const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "shirt" } });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
  });
});

/** Sends a JSON body of about `bytes` to search (which allows extra properties, so only a size limit refuses it). */
async function postPadded(bytes: number): Promise<Response | Error> {
  const body = JSON.stringify({ query: "shirt", padding: "x".repeat(bytes) });
  return fetch(srv.url + "/api/v1/agent/search", {
    method: "POST",
    headers: { "content-type": "application/json", ...key.headers },
    body,
    signal: AbortSignal.timeout(20_000),
  }).catch((err: Error) => err);
}

describe("body size", () => {
  test("a 30 MB body is refused (Bun's maxRequestBodySize), never accepted or a 500", async () => {
    const res = await postPadded(30 * 1024 * 1024);
    // Bun may answer 413 or close the connection while the body is still being sent: both are refusals
    if (!(res instanceof Error)) expect([400, 413]).toContain(res.status);
    const after = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "shirt" } });
    expect(after.status).toBe(200);
  }, 30_000);

  test("a 5 MB JSON body to an API route is refused with 413 and the error envelope before it is read", async () => {
    const res = await postPadded(5 * 1024 * 1024);
    if (res instanceof Error) throw res;
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ success: false, code: "payload_too_large", error: expect.any(String) });
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(res.headers.get("x-agent-commerce")).toBe("1");
  }, 30_000);

  test("a 5 MB body to a JWT route is refused without a 500", async () => {
    const res = await fetch(srv.url + "/api/v1/agent-keys", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ name: "x".repeat(5 * 1024 * 1024) }),
      signal: AbortSignal.timeout(20_000),
    }).catch((err: Error) => err);
    if (res instanceof Error) return;
    expect([400, 413]).toContain(res.status);
  }, 30_000);
});

describe("fixed in this review", () => {
  test("a truncated wallet provision body is 400 and provisions no wallet", async () => {
    const fresh = await createKey(srv, { scopes: ["checkout"], tier: "ENTERPRISE", token: bearer });
    const res = await srv.json("/api/v1/agent/wallet/provision", {
      method: "POST",
      headers: { ...fresh.headers, "content-type": "application/json" },
      body: '{"network": "eip155:8453"',
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("validation_error");
    expect((await srv.json("/api/v1/agent/wallet", { headers: fresh.headers })).status).toBe(404);
  });

  test("a wallet provision body that is a JSON array is 400", async () => {
    const fresh = await createKey(srv, { scopes: ["checkout"], tier: "ENTERPRISE", token: bearer });
    const res = await srv.json("/api/v1/agent/wallet/provision", { method: "POST", headers: fresh.headers, body: [{ network: "eip155:8453" }] });
    expect(res.status).toBe(400);
    expect((await srv.json("/api/v1/agent/wallet", { headers: fresh.headers })).status).toBe(404);
  });

  test("an operator recompute with an unparsable body is 400, not a recompute of every store", async () => {
    const res = await srv.json("/api/v1/admin/trust/recompute", {
      method: "POST",
      headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
      body: '{"slug": "demo-store"',
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("validation_error");
  });

  test("a NUL byte in a slug or a stored text field is a 4xx, never a database error", async () => {
    const auth = { authorization: `Bearer ${bearer}` };
    const cases: [string, RequestInit][] = [
      ["/api/v1/merchant/stores/demo%00store/webhooks", { headers: auth }],
      ["/api/v1/merchant/stores/%00/catalog", { method: "PUT", headers: { ...auth, "content-type": "application/json" }, body: '{"products":[]}' }],
      ["/api/v1/agent/merchants/demo%00store", { headers: key.headers }],
      ["/api/v1/agent/merchants/demo%00store/trust-explanation", { headers: key.headers }],
      ["/api/v1/agent/acp/checkout_sessions/cs_%00", { headers: key.headers }],
      ["/api/v1/agent-keys", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: "a\u0000b" }) }],
      ["/api/v1/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "admin@example.com\u0000", password: "x" }) }],
      ["/api/v1/trust/appeal", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ storeSlug: "demo-store", reason: "ten chars \u0000 at least" }) }],
    ];
    for (const [path, init] of cases) {
      const res = await srv.fetch(path, init);
      expect({ path, status: res.status >= 400 && res.status < 500 }).toEqual({ path, status: true });
    }
  });
});
