/**
 * A fuzzer of the REST surface driven by the served OpenAPI document (/api/v1/openapi.json): for each operation it
 * generates requests with fast-check — valid-looking bodies from the operation's request schema and mutated ones
 * (wrong types, missing fields, extreme numbers, odd strings, deep nesting, junk path and query values, wrong content
 * types, truncated JSON) — and checks each answer against what the developers' guide promises for bad input: no 5xx
 * (beyond the documented 501 and a 503/502 with a documented code), the error shape of the surface, no stack trace,
 * an X-Request-Id, a status the operation documents, and a 2xx that validates against its documented schema.
 *
 * Generation is deterministic: every operation's requests come from `fc.sample` with a seed derived from the run's
 * seed and the operation's key, so a finding repeats with the same seed. Used by test/http/fuzz-openapi.test.ts.
 */
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import fc from "fast-check";

// ---------------------------------------------------------------------------------------------------------------
// The document
// ---------------------------------------------------------------------------------------------------------------

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  patternProperties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  pattern?: string;
  format?: string;
  default?: unknown;
};

export interface OpenApiParameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: JsonSchema;
}

export interface OpenApiResponse {
  description?: string;
  content?: Record<string, { schema?: JsonSchema }>;
  headers?: Record<string, unknown>;
  "x-error-codes"?: string[];
}

export interface OpenApiOperation {
  security?: Record<string, string[]>[];
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, OpenApiResponse>;
}

export interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas?: Record<string, JsonSchema>; headers?: Record<string, unknown> };
}

export interface DocOperation {
  /** `METHOD /path` as the document spells it (gateway/openapi/operations.ts's key). */
  key: string;
  method: string;
  path: string;
  op: OpenApiOperation;
}

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

export function operationsOf(doc: OpenApiDoc): DocOperation[] {
  const out: DocOperation[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(byMethod)) {
      if (!HTTP_METHODS.has(m)) continue;
      const method = m.toUpperCase();
      out.push({ key: `${method} ${path}`, method, path, op });
    }
  }
  return out;
}

/** Follows local `$ref`s (`#/components/...`) to the schema they name. */
export function deref(doc: OpenApiDoc, s: JsonSchema | undefined): JsonSchema | undefined {
  let cur = s;
  for (let i = 0; cur?.$ref && i < 20; i++) {
    const parts = cur.$ref.replace(/^#\//, "").split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
    let node: unknown = doc;
    for (const p of parts) node = (node as Record<string, unknown> | undefined)?.[p];
    cur = node as JsonSchema | undefined;
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------------------------
// Values the generator knows (so valid-looking requests reach past the lookups)
// ---------------------------------------------------------------------------------------------------------------

/** Real ids and names of the running service, by kind; the generator mixes them with unknown and junk ones. */
export interface KnownValues {
  products: string[];
  carts: string[];
  orders: string[];
  checkoutSessions: string[];
  acpSessions: string[];
  ucpSessions: string[];
  webhooks: string[];
  refunds: string[];
  /** Agent key ids the fuzzer may revoke or block (never the key it acts with). */
  spareKeys: string[];
  coupons: string[];
  slugs: string[];
  /**
   * Coherent requests of an operation, by its key (`METHOD /path`), that the test built through the API before the
   * run: a path with the ids of resources in the state the operation needs (a cart of the caller still open, a refund
   * still pending, a webhook with a delivery, an approval link of a waiting payment, an OAuth client with its secret,
   * a signed AP2 mandate, ...) and a body whose fields agree with one another and with that state. The generator sends
   * them (kind `seeded`) beside its own valid-looking requests, and mutates their bodies too, so the operation's
   * success path and its 2xx schema are exercised, and its bad-input checks are reached past the lookups.
   */
  seeds?: Record<string, Seed[]>;
}

/** The kinds of id a path parameter or a body field may name (KnownValues' pools). */
type PoolKind = Exclude<keyof KnownValues, "seeds">;

/** One coherent request (see KnownValues.seeds): path and query as sent, the body, and headers beyond the credential. */
export interface Seed {
  url: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What a path parameter or a body field names, from its name and (for a bare `id`) the path around it. */
function kindOf(name: string, path: string): PoolKind | undefined {
  const n = name.toLowerCase();
  if (/slug/.test(n)) return "slugs";
  if (n === "product_id" || n === "productid" || n === "productids") return "products";
  if (n === "cartid" || n === "cart_id") return "carts";
  if (n === "orderid" || n === "order_id") return "orders";
  if (n === "sessionid") return "checkoutSessions";
  if (n === "keyid") return "spareKeys";
  if (n === "code" && /coupons/.test(path)) return "coupons";
  if (n === "deliveryid") return undefined;
  if (n !== "id") return undefined;
  if (/\/agent\/(products|availability)\//.test(path)) return "products";
  if (/\/cart\//.test(path)) return "carts";
  if (/\/orders\//.test(path)) return "orders";
  if (/\/acp\//.test(path)) return "acpSessions";
  if (/\/ucp\//.test(path)) return "ucpSessions";
  if (/\/webhooks\//.test(path)) return "webhooks";
  if (/\/refunds\//.test(path)) return "refunds";
  if (/agent-keys\//.test(path)) return "spareKeys";
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Valid-looking values from a schema
// ---------------------------------------------------------------------------------------------------------------

const MAX_GEN_DEPTH = 6;

function clampLen(max: number | undefined, cap: number): number {
  return Math.min(max ?? cap, cap);
}

/** Sandbox payment tokens (the rail's test outcomes: docs/checkout.md). */
const PAY_TOKENS = ["tok_approve", "tok_decline", "tok_fail", "tok_needs_approval", "MOCK"];

function stringFor(s: JsonSchema, ctx: GenContext, known: KnownValues): fc.Arbitrary<string> {
  const { name, path } = ctx;
  // an `id` inside line items names a product (ACP `items[].id`, UCP `line_items[].item.id`)
  const kind = name === "id" && /^(items|item|line_items)$/.test(ctx.parent ?? "") ? "products" : kindOf(name, path);
  const pool = kind ? known[kind] : [];
  const min = s.minLength ?? 0;
  const max = Math.max(min, clampLen(s.maxLength, 24));
  let base: fc.Arbitrary<string>;
  if (/currency/i.test(name)) base = fc.constantFrom("USD", "EUR", "usd", "GBP", "XXX");
  else if (/country/i.test(name)) base = fc.constantFrom("US", "DE", "JP", "FR", "us");
  else if (/postal/i.test(name)) base = fc.constantFrom("94105", "10115", "100-0001");
  else if (/^(token|payment_method)$/.test(name)) base = fc.constantFrom(...PAY_TOKENS);
  else if (/^idempotency_key$/i.test(name)) base = fc.uuid({ version: 4 });
  else if (/url$/i.test(name) && !s.format) base = fc.oneof(fc.webUrl(), fc.constantFrom("http://127.0.0.1:9/hook", "https://example.com/hook"));
  else if (s.format === "uuid") base = fc.uuid();
  else if (s.format === "email") base = fc.oneof(fc.emailAddress(), fc.constantFrom("admin@example.com", "owner@greenleaf-living.example"));
  else if (s.format === "uri" || s.format === "url") base = fc.webUrl();
  else if (s.format === "date-time") base = fc.date({ min: new Date(2020, 0, 1), max: new Date(2030, 0, 1), noInvalidDate: true }).map((d) => d.toISOString());
  else if (s.format === "date") base = fc.date({ min: new Date(2020, 0, 1), max: new Date(2030, 0, 1), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
  else if (s.pattern) {
    let re: RegExp | undefined;
    try {
      re = new RegExp(s.pattern, "u");
    } catch {
      re = undefined;
    }
    base = re ? fc.stringMatching(re).filter((v) => v.length >= min && v.length <= (s.maxLength ?? Infinity)) : fc.string({ minLength: min, maxLength: max });
  } else base = fc.string({ minLength: min, maxLength: max });
  return pool.length ? fc.oneof({ arbitrary: fc.constantFrom(...pool), weight: 3 }, { arbitrary: base, weight: 1 }) : base;
}

function numberFor(s: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 0);
  const hi = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : Math.max(lo, 0) + 1000);
  if (integer) return fc.integer({ min: Math.ceil(lo), max: Math.max(Math.ceil(lo), Math.floor(hi)) });
  return fc.double({ min: lo, max: Math.max(lo, hi), noNaN: true, noDefaultInfinity: true }).map((v) => Math.round(v * 100) / 100);
}

/** A valid-looking value of `schema` (bounds, enums, formats and patterns respected; known ids preferred). */
export interface GenContext {
  /** the field's name ("" for a whole body) */
  name: string;
  /** the enclosing object's or array's field name */
  parent?: string;
  /** the operation's path template */
  path: string;
  known: KnownValues;
  /** only the required members of objects (the optional ones, drawn at random, often contradict one another) */
  minimal?: boolean;
}

export function valueFor(doc: OpenApiDoc, schema: JsonSchema | undefined, ctx: GenContext, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(doc, schema) ?? {};
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum?.length) return fc.constantFrom(...s.enum);
  const alts = s.anyOf ?? s.oneOf;
  if (alts?.length) return fc.oneof(...alts.map((a) => valueFor(doc, a, ctx, depth + 1)));
  if (s.allOf?.length) {
    // merge objects (what TypeBox's intersections and the document's composites are)
    const merged: JsonSchema = { type: "object", properties: {}, required: [] };
    for (const part of s.allOf.map((p) => deref(doc, p) ?? {})) {
      Object.assign(merged.properties!, part.properties ?? {});
      merged.required!.push(...(part.required ?? []));
    }
    return valueFor(doc, merged, ctx, depth + 1);
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ["object"] : [];
  if (types.length > 1) return fc.oneof(...types.map((t) => valueFor(doc, { ...s, type: t }, ctx, depth + 1)));
  const type = types[0];
  switch (type) {
    case "string":
      return stringFor(s, ctx, ctx.known);
    case "integer":
      return numberFor(s, true);
    case "number":
      return numberFor(s, false);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      if (depth > MAX_GEN_DEPTH) return fc.constant([]);
      const min = s.minItems ?? 0;
      return fc.array(valueFor(doc, s.items, { ...ctx, parent: ctx.name }, depth + 1), { minLength: min, maxLength: Math.max(min, clampLen(s.maxItems, 3)) });
    }
    case "object": {
      if (depth > MAX_GEN_DEPTH) return fc.constant({});
      const props = s.properties ?? {};
      const keys = Object.keys(props);
      if (!keys.length) return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean()), { maxKeys: 3 });
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const k of keys) model[k] = valueFor(doc, props[k], { ...ctx, name: k, parent: ctx.name || ctx.parent }, depth + 1);
      const required = (s.required ?? []).filter((k) => k in props);
      if (ctx.minimal) return fc.record(Object.fromEntries(required.map((k) => [k, model[k]!])));
      return fc.record(model, { requiredKeys: required });
    }
    default:
      return fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Junk
// ---------------------------------------------------------------------------------------------------------------

/** Nested `{"a":{"a":…}}` n levels deep (the depth guard's business: gateway/plugins/json-depth.ts). */
export function deepObject(n: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
}

function deepArray(n: number): unknown {
  let v: unknown = [];
  for (let i = 0; i < n; i++) v = [v];
  return v;
}

/** Strings a validator or a database may trip over. */
export const ODD_STRINGS: readonly string[] = [
  "",
  " ",
  "x".repeat(10_000),
  "😀".repeat(300),
  "\ud800", // lone high surrogate (sent as the JSON escape \ud800)
  "\udfff\ud800",
  "a\u0000b", // NUL: Postgres text refuses it
  "\u0000",
  "\u202eabc\u202d", // RTL override
  "مرحبا",
  "e\u0301",
  "%00",
  "../../etc/passwd",
  "..%2F..%2F",
  "'; DROP TABLE orders; --",
  "<script>alert(1)</script>",
  "${7*7}",
  "null",
  "-1",
  "1e308",
  "NaN",
  "\r\n\t",
  "\ufeff",
  "\uffff",
];

/** Numbers at and past every edge. */
export const ODD_NUMBERS: readonly number[] = [0, -0, -1, 1, 1.5, 0.1, -0.01, 2 ** 31, 2 ** 53 + 2, -(2 ** 53) - 2, 1e308, -1e308, 5e-324, 1e21, 99_999_999_999];

const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(...ODD_STRINGS),
  fc.constantFrom<unknown>(...ODD_NUMBERS),
  fc.constantFrom<unknown>(null, true, false, [], {}, [null], [1, "a"], { x: 1 }, deepObject(40), deepArray(40), [{ id: "x" }]),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
);

/** Every JSON-pointer-ish path (as key arrays) into a value, the value itself first. */
function pathsOf(v: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = [], depth = 0): (string | number)[][] {
  out.push(prefix);
  if (depth > 8 || v === null || typeof v !== "object") return out;
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...prefix, i], out, depth + 1));
  else for (const [k, x] of Object.entries(v)) pathsOf(x, [...prefix, k], out, depth + 1);
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown, remove = false): unknown {
  if (!path.length) return value;
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (remove) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else node[last] = value;
  return copy;
}

/** A mutation of a valid-looking body: one field replaced, removed or wrapped, or unknown fields added. */
function mutate(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc
    .tuple(valid, fc.nat(), oddValue, fc.constantFrom("replace", "remove", "wrap", "unknown", "null-all"))
    .map(([v, pick, odd, how]) => {
      const paths = pathsOf(v);
      const path = paths[pick % paths.length]!;
      if (how === "remove" && path.length) return setAt(v, path, undefined, true);
      if (how === "wrap") {
        const cur = path.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)?.[k], v);
        return setAt(v, path, [cur]);
      }
      if (how === "unknown" && v && typeof v === "object" && !Array.isArray(v)) return { ...(v as object), __proto__x: odd, ["zz_" + String(pick % 97)]: odd };
      if (how === "null-all" && v && typeof v === "object" && !Array.isArray(v)) return Object.fromEntries(Object.keys(v).map((k) => [k, null]));
      return setAt(v, path, odd);
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

export type AuthKind = "agent" | "merchant" | "admin";
/**
 * Credentials the fuzzer uses: the right one for an operation most of the time, sometimes none or a wrong one
 * (`foreign`: a merchant who owns another store than the one the known values name).
 */
export type Credentials = Record<AuthKind | "foreign", Record<string, string>>;

export interface FuzzRequest {
  /** which generator made it (for the report) */
  kind: "valid" | "seeded" | "mutated" | "raw-body" | "content-type" | "path" | "query" | "auth";
  method: string;
  /** path and query string, as sent */
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** Path values that are junk: unknown, too long, traversal, bad percent-encoding, odd characters. */
const JUNK_SEGMENTS: readonly string[] = [
  "00000000-0000-4000-8000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "x".repeat(10_000),
  "..%2F..%2Fetc%2Fpasswd",
  "%2e%2e",
  "%ZZ",
  "%",
  "%C0%AF",
  "%F0%9F%98%80",
  "%ED%A0%80", // an encoded lone surrogate
  "%00",
  "a%2Fb",
  "%20",
  "-1",
  "0",
  "1e308",
  "null",
  "%E2%80%AEabc",
  "DEMO-STORE",
  "demo-store%00",
];

const JUNK_QUERIES: readonly string[] = [
  "?",
  "?&&&",
  "?=",
  "?limit=1&limit=2",
  "?limit=-1",
  "?limit=0x10",
  "?limit=1e2",
  "?limit=99999999999999999999",
  "?page=%ZZ",
  "?status=%00",
  "?a[b]=1",
  "?" + "q=" + "x".repeat(8_000),
  "?days=1.5",
  "?offset=-0",
  "?email=%F0%9F%98%80",
  "?status=\u202e",
];

function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? "x");
}

function pathValue(name: string, path: string, schema: JsonSchema | undefined, known: KnownValues, doc: OpenApiDoc): fc.Arbitrary<string> {
  const kind = kindOf(name, path);
  const pool = kind ? known[kind] : [];
  const own = valueFor(doc, schema ?? { type: "string" }, { name, path, known }).map((v) => encodeURIComponent(String(v)));
  return fc.oneof(
    ...(pool.length ? [{ arbitrary: fc.constantFrom(...pool).map(encodeURIComponent), weight: 6 }] : []),
    { arbitrary: own, weight: 2 },
    { arbitrary: fc.constantFrom(...JUNK_SEGMENTS), weight: 2 },
  );
}

function queryFor(op: OpenApiOperation, path: string, known: KnownValues, doc: OpenApiDoc): fc.Arbitrary<string> {
  const qs = (op.parameters ?? []).filter((p) => p.in === "query");
  if (!qs.length) return fc.constant("");
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of qs) model[p.name] = valueFor(doc, p.schema, { name: p.name, path, known });
  const required = qs.filter((p) => p.required).map((p) => p.name);
  return fc.record(model, { requiredKeys: required }).map((o) => {
    const entries = Object.entries(o).filter(([, v]) => v !== undefined);
    return entries.length ? "?" + entries.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join("&") : "";
  });
}

export function authKindOf(d: DocOperation): AuthKind | undefined {
  const sec = d.op.security?.flatMap((s) => Object.keys(s)) ?? [];
  if (sec.includes("agentApiKey")) return "agent";
  if (!sec.includes("bearer")) return undefined;
  return d.path.startsWith("/api/v1/admin/") ? "admin" : "merchant";
}

const WRONG_AUTH: readonly Record<string, string>[] = [
  {},
  { authorization: "Bearer not-a-jwt" },
  { authorization: "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0." },
  { authorization: "Basic Zm9vOmJhcg==" },
  { "x-agent-api-key": "acs_live_" + "0".repeat(40) },
  { "x-agent-api-key": "\u00e9".repeat(4) },
];

const WRONG_CONTENT_TYPES: readonly string[] = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "APPLICATION/JSON",
  "application/merge-patch+json",
  "application/json; charset=latin1",
  "",
];

function mediaOf(op: OpenApiOperation): { type: string; schema: JsonSchema | undefined } | undefined {
  const content = op.requestBody?.content;
  if (!content) return undefined;
  const type = Object.keys(content)[0]!;
  return { type, schema: content[type]!.schema };
}

function encodeBody(type: string, value: unknown): string {
  if (type === "application/x-www-form-urlencoded" && value && typeof value === "object" && !Array.isArray(value)) {
    return new URLSearchParams(Object.entries(value).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString();
  }
  return JSON.stringify(value);
}

/**
 * `runs` requests for one operation, deterministic in `seed`: about a third valid-looking, the rest spread over the
 * kinds of bad input (mutated bodies, raw junk bodies, wrong content types, junk path values, odd query strings, and
 * missing or wrong credentials).
 */
export function requestsFor(d: DocOperation, doc: OpenApiDoc, known: KnownValues, creds: Credentials, seed: number, runs: number): FuzzRequest[] {
  const pathParams = (d.op.parameters ?? []).filter((p) => p.in === "path");
  const pathModel: Record<string, fc.Arbitrary<string>> = {};
  for (const p of pathParams) pathModel[p.name] = pathValue(p.name, d.path, p.schema, known, doc);
  // a valid path: known values where there are any, else the generator's own
  const goodPathModel: Record<string, fc.Arbitrary<string>> = {};
  for (const p of pathParams) {
    const kind = kindOf(p.name, d.path);
    const pool = kind ? known[kind] : [];
    goodPathModel[p.name] = pool.length ? fc.constantFrom(...pool).map(encodeURIComponent) : pathValue(p.name, d.path, p.schema, known, doc);
  }
  const anyPath = fc.record(pathModel).map((v) => fillPath(d.path, v));
  const goodPath = fc.record(goodPathModel).map((v) => fillPath(d.path, v));
  const query = queryFor(d.op, d.path, known, doc);
  const media = mediaOf(d.op);
  const auth = authKindOf(d);
  const rightAuth = auth ? creds[auth] : {};
  const extraHeaders: Record<string, string> = {};
  if ((d.op.parameters ?? []).some((p) => p.in === "header" && p.name === "API-Version") && d.path.includes("/acp/")) extraHeaders["api-version"] = "2025-09-29";
  const idem = (d.op.parameters ?? []).some((p) => p.in === "header" && p.name === "Idempotency-Key");

  const validBody = media
    ? fc.oneof(valueFor(doc, media.schema, { name: "", path: d.path, known }), valueFor(doc, media.schema, { name: "", path: d.path, known, minimal: true }))
    : fc.constant(undefined);
  const headersFor = (ct: string | undefined, idemKey: string | undefined): Record<string, string> => ({
    ...rightAuth,
    ...extraHeaders,
    ...(ct !== undefined ? { "content-type": ct } : {}),
    ...(idem && idemKey ? { "idempotency-key": idemKey } : {}),
  });
  const bodyType = media?.type ?? "application/json";
  const hasBody = d.method !== "GET" && d.method !== "HEAD";

  const valid: fc.Arbitrary<FuzzRequest> = fc.tuple(goodPath, query, validBody, fc.uuid()).map(([p, q, b, k]) => ({
    kind: "valid",
    method: d.method,
    url: p + q,
    headers: headersFor(b !== undefined ? bodyType : undefined, k),
    ...(b !== undefined ? { body: encodeBody(bodyType, b) } : {}),
  }));
  const mutated: fc.Arbitrary<FuzzRequest> = fc.tuple(goodPath, mutate(validBody.map((b) => b ?? {})), fc.uuid()).map(([p, b, k]) => ({
    kind: "mutated",
    method: d.method,
    url: p,
    headers: headersFor(bodyType, k),
    body: encodeBody(bodyType, b),
  }));
  // coherent requests the test set up (KnownValues.seeds), as they are and with their bodies mutated
  const seeds = known.seeds?.[d.key] ?? [];
  const seedHeaders = (s: Seed, k: string | undefined, withBody: boolean) => ({ ...headersFor(withBody ? bodyType : undefined, k), ...(s.headers ?? {}) });
  const seeded: fc.Arbitrary<FuzzRequest> | undefined = seeds.length
    ? fc.tuple(fc.constantFrom(...seeds), fc.uuid()).map(([s, k]) => ({
        kind: "seeded",
        method: d.method,
        url: s.url,
        headers: seedHeaders(s, k, s.body !== undefined),
        ...(s.body !== undefined ? { body: encodeBody(bodyType, s.body) } : {}),
      }))
    : undefined;
  const seededMutated: fc.Arbitrary<FuzzRequest> | undefined = seeds.some((s) => s.body !== undefined)
    ? fc
        .constantFrom(...seeds.filter((s) => s.body !== undefined))
        .chain((s) => fc.tuple(fc.constant(s), mutate(fc.constant(s.body)), fc.uuid()))
        .map(([s, b, k]) => ({ kind: "mutated", method: d.method, url: s.url, headers: seedHeaders(s, k, true), body: encodeBody(bodyType, b) }))
    : undefined;
  const rawBody: fc.Arbitrary<FuzzRequest> = fc
    .tuple(
      goodPath,
      validBody,
      fc.constantFrom<(valid: string) => string>(
        (v) => v.slice(0, Math.max(1, Math.floor(v.length / 2))), // truncated JSON
        () => "[]",
        () => "null",
        () => "42",
        () => '"text"',
        () => "{",
        () => '{"a":1,}',
        () => "{'a':1}",
        () => '{"a":"\\ud800"}',
        () => '{"a":"\\u0000"}',
        () => "\u0000",
        () => JSON.stringify(deepObject(5000)),
        () => "[".repeat(100_000),
        () => '{"__proto__":{"polluted":true}}',
        () => '{"constructor":{"prototype":{"x":1}}}',
        (v) => v + v, // two JSON values
        (v) => "\ufeff" + v, // BOM
        () => "",
      ),
    )
    .map(([p, b, f]) => ({ kind: "raw-body", method: d.method, url: p, headers: headersFor(bodyType, undefined), body: f(encodeBody(bodyType, b ?? {})) }));
  const contentType: fc.Arbitrary<FuzzRequest> = fc.tuple(goodPath, validBody, fc.constantFrom(...WRONG_CONTENT_TYPES)).map(([p, b, ct]) => ({
    kind: "content-type",
    method: d.method,
    url: p,
    headers: headersFor(ct, undefined),
    body: encodeBody(bodyType, b ?? {}),
  }));
  const badPath: fc.Arbitrary<FuzzRequest> = fc.tuple(anyPath, validBody, fc.uuid()).map(([p, b, k]) => ({
    kind: "path",
    method: d.method,
    url: p,
    headers: headersFor(b !== undefined ? bodyType : undefined, k),
    ...(b !== undefined ? { body: encodeBody(bodyType, b) } : {}),
  }));
  const badQuery: fc.Arbitrary<FuzzRequest> = fc.tuple(goodPath, fc.constantFrom(...JUNK_QUERIES), validBody).map(([p, q, b]) => ({
    kind: "query",
    method: d.method,
    url: p + q,
    headers: headersFor(b !== undefined ? bodyType : undefined, undefined),
    ...(b !== undefined ? { body: encodeBody(bodyType, b) } : {}),
  }));
  const badAuth: fc.Arbitrary<FuzzRequest> = fc.tuple(goodPath, validBody, fc.constantFrom<Record<string, string>>(...WRONG_AUTH, creds.agent, creds.merchant, creds.admin, creds.foreign)).map(([p, b, a]) => ({
    kind: "auth",
    method: d.method,
    url: p,
    headers: { ...a, ...extraHeaders, ...(b !== undefined ? { "content-type": bodyType } : {}) },
    ...(b !== undefined ? { body: encodeBody(bodyType, b) } : {}),
  }));

  const kinds: { arbitrary: fc.Arbitrary<FuzzRequest>; weight: number }[] = [
    { arbitrary: valid, weight: seeded ? 3 : 5 },
    ...(seeded ? [{ arbitrary: seeded, weight: 5 }] : []),
    ...(seededMutated ? [{ arbitrary: seededMutated, weight: 3 }] : []),
    { arbitrary: badQuery, weight: 1 },
    { arbitrary: badAuth, weight: auth ? 2 : 0 },
    { arbitrary: badPath, weight: pathParams.length ? 3 : 0 },
    { arbitrary: mutated, weight: hasBody && media ? (seededMutated ? 2 : 5) : 0 },
    { arbitrary: rawBody, weight: hasBody ? 3 : 0 },
    { arbitrary: contentType, weight: hasBody ? 1 : 0 },
  ].filter((k) => k.weight > 0);
  // Idempotency-Keys come from the seeded fc.uuid too, so a run repeats exactly (each run has a fresh database)
  return fc.sample(fc.oneof(...kinds), { seed, numRuns: runs });
}

/** A stable 32-bit seed for an operation, from the run's seed and the operation's key. */
export function seedFor(runSeed: number, key: string): number {
  let h = runSeed | 0;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h ^ key.charCodeAt(i), 0x9e3779b1) + 0x7f4a7c15) | 0;
  return h;
}

// ---------------------------------------------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------------------------------------------

export interface FuzzAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
  ms: number;
  /** set when the request did not finish within the timeout (a hang) or the connection failed */
  failure?: string;
}

export async function send(base: string, r: FuzzRequest, timeoutMs: number): Promise<FuzzAnswer> {
  const t0 = performance.now();
  try {
    const res = await fetch(base + r.url, { method: r.method, headers: r.headers, body: r.body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json, ms: performance.now() - t0 };
  } catch (e) {
    const err = e as Error;
    return { status: 0, headers: new Headers(), text: "", json: undefined, ms: performance.now() - t0, failure: err.name === "TimeoutError" ? `no answer in ${timeoutMs} ms` : `${err.name}: ${err.message}` };
  }
}

/** Kinds of problem; a known-list entry names one of these with the operation key and the status (and code). */
export type ProblemKind = "server-error" | "hang" | "stack-trace" | "no-request-id" | "error-shape" | "success-schema" | "undocumented-status" | "unlisted-code";

export interface Problem {
  kind: ProblemKind;
  op: string;
  status: number;
  code?: string;
  detail: string;
  request: FuzzRequest;
}

/** The error code of an answer: our envelope's / ACP's / OAuth's `code`, or a UCP error's first message code. */
export function codeOf(body: unknown): string | undefined {
  const b = body as { code?: unknown; messages?: { code?: unknown }[] } | undefined;
  if (typeof b?.code === "string") return b.code;
  const m = b?.messages?.[0]?.code;
  return typeof m === "string" ? m : undefined;
}

const STACK = [/\n\s+at\s/, /\/work\//, /\.ts:\d/, /\.ts:/, /node_modules/, /\bat (async )?[\w.$<>]+ \(/];

/** Which error shape a path's failures use (gateway/bridge/error-shape.ts): ACP's, UCP's or our envelope. */
function surfaceOf(path: string): "acp" | "ucp" | "rest" {
  if (path.startsWith("/api/v1/agent/acp/")) return "acp";
  if (path.startsWith("/api/v1/agent/ucp/")) return "ucp";
  return "rest";
}

function isEnvelope(b: unknown): boolean {
  const e = b as { success?: unknown; error?: unknown; code?: unknown; details?: unknown } | undefined;
  return !!e && typeof e === "object" && e.success === false && typeof e.error === "string" && typeof e.code === "string" && (e.details === undefined || (typeof e.details === "object" && e.details !== null && !Array.isArray(e.details)));
}
function isAcpError(b: unknown): boolean {
  const e = b as { type?: unknown; code?: unknown; message?: unknown } | undefined;
  return !!e && typeof e.type === "string" && typeof e.code === "string" && typeof e.message === "string";
}
function isUcpError(b: unknown): boolean {
  const e = b as { messages?: { type?: unknown; code?: unknown; content?: unknown }[] } | undefined;
  return !!e && Array.isArray(e.messages) && e.messages.length > 0 && e.messages.every((m) => m.type === "error" && typeof m.code === "string" && typeof m.content === "string");
}
/** RFC 6749 §5.2's error, which the OAuth endpoints answer (with our `success`/`code` beside it). */
function isOauthError(b: unknown): boolean {
  const e = b as { error?: unknown; code?: unknown; success?: unknown } | undefined;
  return !!e && e.success === false && typeof e.error === "string" && typeof e.code === "string";
}

/** Compiles the documented response schemas on demand (the whole document is one ajv schema, so `$ref`s resolve). */
export class ResponseValidator {
  private readonly ajv: Ajv2020;
  private readonly cache = new Map<string, ValidateFunction | null>();
  constructor(doc: OpenApiDoc) {
    this.ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema(doc as object, "doc");
  }
  /** null: the response documents no JSON schema. */
  validator(d: DocOperation, status: number): ValidateFunction | null {
    const id = `${d.key} ${status}`;
    if (!this.cache.has(id)) {
      const schema = d.op.responses?.[String(status)]?.content?.["application/json"]?.schema;
      if (!schema) this.cache.set(id, null);
      else {
        const esc = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");
        const ref = `doc#/paths/${esc(d.path)}/${d.method.toLowerCase()}/responses/${status}/content/${esc("application/json")}/schema`;
        this.cache.set(id, this.ajv.getSchema(ref) ?? null);
      }
    }
    return this.cache.get(id)!;
  }
}

/** Statuses a request may be answered with although no operation lists them: the router's own. */
const ROUTER_STATUSES = new Set([404, 405]);

/** Every problem with one answer. `allowed5xx` says which 5xx (status and code) the surface may answer. */
export function checkAnswer(d: DocOperation, r: FuzzRequest, a: FuzzAnswer, v: ResponseValidator): Problem[] {
  const out: Problem[] = [];
  const code = codeOf(a.json);
  const p = (kind: ProblemKind, detail: string) => out.push({ kind, op: d.key, status: a.status, ...(code ? { code } : {}), detail, request: r });
  if (a.failure) {
    p("hang", a.failure);
    return out;
  }
  const documented = d.op.responses?.[String(a.status)];
  const codes = documented?.["x-error-codes"] ?? [];
  const sentPath = new URL("http://h" + r.url).pathname;
  if (a.status >= 500) {
    const ok501 = a.status === 501 && codes.includes(code ?? "");
    const ok503 = (a.status === 503 || a.status === 502) && codes.includes(code ?? "") && code !== "internal_error";
    if (!ok501 && !ok503) p("server-error", `${a.status} ${code ?? ""}: ${a.text.slice(0, 300)}`);
  }
  for (const re of STACK) {
    if (re.test(a.text)) {
      p("stack-trace", `matches ${re}: ${a.text.slice(0, 300)}`);
      break;
    }
  }
  if (!a.headers.get("x-request-id")) p("no-request-id", "no X-Request-Id header");
  const media = (a.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  // an HTML page is the answer where the operation documents one (the OAuth consent flow's pages for a human)
  const documentedPage = media !== "application/json" && !!documented?.content && media in documented.content;
  if (a.status >= 400 && a.status < 500 && !documentedPage) {
    const surface = surfaceOf(sentPath);
    const shaped =
      surface === "acp" ? isAcpError(a.json) : surface === "ucp" ? isUcpError(a.json) : d.path.startsWith("/api/v1/oauth/") ? isEnvelope(a.json) || isOauthError(a.json) : isEnvelope(a.json);
    if (!shaped) p("error-shape", `not the ${surface} error shape: ${a.text.slice(0, 300)}`);
  }
  // a junk segment like `%2e%2e` is a dot-segment the client removes (WHATWG URL): the request went to another path
  // (another operation, or none: the router's 404 or 405), so this operation's statuses and schemas do not apply
  if (!new RegExp(`^${d.path.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(sentPath)) return out;
  if (!documented && !(ROUTER_STATUSES.has(a.status) && (code === "route_not_found" || code === "method_not_allowed"))) {
    p("undocumented-status", `status ${a.status} (${code ?? "no code"}) not in the operation's responses`);
  } else if (documented && a.status >= 400 && codes.length && !codes.includes(code ?? "")) {
    p("unlisted-code", `code ${code ?? "none"} not in x-error-codes ${JSON.stringify(codes)}`);
  }
  if (a.status >= 200 && a.status < 300 && documented) {
    const validate = v.validator(d, a.status);
    if (validate && a.json !== undefined && !validate(a.json)) {
      const errs = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath} ${e.message}`);
      p("success-schema", `${errs.join("; ")}: ${a.text.slice(0, 400)}`);
    }
  }
  return out;
}

/** One line that repeats a request with curl (bodies and long values cut to keep the report readable). */
export function reproduction(base: string, r: FuzzRequest, cut = 200): string {
  const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
  const short = (s: string) => (s.length > cut ? `${s.slice(0, cut)}…(${s.length} chars)` : s);
  const hs = Object.entries(r.headers).map(([k, v]) => `-H ${q(`${k}: ${short(v)}`)}`);
  return ["curl -s -X", r.method, ...hs, ...(r.body !== undefined ? ["--data-binary", q(short(r.body))] : []), q(base + short(r.url))].join(" ");
}
