/**
 * Completes the generated OpenAPI document so it lists every answer: for every operation its success status with a
 * schema (operations.ts, where the route declares none), every error status it can return with the error envelope,
 * and per status the `code`s (`x-error-codes`, and an enum on `code`). Codes shared by a kind of route are added by
 * rule here (`ruleCodes`); a route's own codes come from its row in operations.ts.
 *
 * The document is built by @elysiajs/openapi from the routes; `openapiDocument` wraps that plugin and completes its
 * answer (a hook local to the plugin's two routes, so no other route pays for it), once per generated document.
 *
 * A route that refuses unknown body keys (gateway/rest/strict-body.ts) has its request body marked
 * `additionalProperties: false` on every object the check treats as closed (`closedBody`), so a generated client
 * learns it from the document, not from the 400.
 */
import { docsPageHeaders, docsPageHtml } from "./docs-page.ts";
import { openapi } from "@elysiajs/openapi";
import { Elysia, type TSchema } from "elysia";
import { Kind } from "@sinclair/typebox";
import { strictSchemaOf } from "../rest/strict-body.ts";
import { findRouteRule } from "../../actors/agent/access.ts";
import { JSON_CONTENT_TYPE, underJsonContract } from "../plugins/json-body.ts";
import { ERROR_TABLE, isErrorCode } from "../../actors/runtime/errors.ts";
import { ErrorEnvelope } from "../envelope.ts";
import { ACP_API_VERSION_HEADER, ACP_API_VERSIONS, ACP_DEFAULT_API_VERSION } from "../bridge/acp.ts";
import { OPERATIONS, type OperationDoc } from "./operations.ts";
import { acceptedCoding, COMPRESS_MIN_BYTES, compressBody, withVary, type Coding } from "../plugins/compression.ts";

type Json = Record<string, unknown>;
interface Operation {
  parameters?: unknown[];
  requestBody?: { content?: Record<string, { schema?: unknown }>; required?: boolean };
  responses?: Record<string, Json>;
  security?: Record<string, string[]>[];
  description?: string;
  [k: string]: unknown;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown>; [k: string]: unknown };
  [k: string]: unknown;
}

const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);
const ENVELOPE_REF = "#/components/schemas/ErrorEnvelope";

/** A TypeBox schema as plain JSON Schema (TypeBox's symbol keys and our `$id`s dropped). */
function jsonSchema(s: TSchema | unknown): Json {
  return JSON.parse(JSON.stringify(s, (k, v) => (k === "$id" ? undefined : v))) as Json;
}

/** `/api/v1/x/{id}` → `/api/v1/x/:id` (the access table's form). */
const colonPath = (path: string) => path.replace(/\{([^}]+)\}/g, ":$1");

function add(into: Map<number, Set<string>>, status: number, ...codes: readonly string[]): void {
  const set = into.get(status) ?? new Set<string>();
  for (const c of codes) set.add(c);
  into.set(status, set);
}

/**
 * Codes every route of its kind can answer, whatever it does:
 * - agent routes (the access table, actors/agent/access.ts): 401 unauthorized; 403 forbidden (scope), plus
 *   sandbox_not_allowed on transactional routes and feature_not_in_tier on feature-tier routes; 429 per key;
 * - JWT routes (security bearer): 401 unauthorized / token_expired; operator-only routes (/admin) 403 forbidden;
 * - every route but the health probe: 429 (the global per-IP bucket, gateway/plugins/rate-limit.ts);
 * - a route with parameters or a body, every write (a malformed JSON body is refused whatever the route reads),
 *   and every route under the JSON request contract but the health probe (a query parameter given twice is refused
 *   whatever the route reads: gateway/plugins/json-body.ts): 400 validation_error (gateway/plugins/errors.ts);
 * - every method but GET/HEAD: 413 payload_too_large (gateway/plugins/body-limit.ts, on Content-Length);
 * - every route: 500 internal_error (the spec's REST table: unexpected, retry with backoff), 503
 *   service_unavailable (database outage) and actor_unavailable (an actor did not answer).
 */
export function ruleCodes(method: string, path: string, op: Operation): Map<number, Set<string>> {
  const codes = new Map<number, Set<string>>();
  const upper = method.toUpperCase();
  const rule = path.startsWith("/api/v1/agent/") ? findRouteRule(upper, colonPath(path)) : undefined;
  const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
  if (rule) {
    add(codes, 401, "unauthorized");
    add(codes, 403, "forbidden");
    if (rule.sandboxRefused) add(codes, 403, "sandbox_not_allowed");
    if (rule.feature) add(codes, 403, "feature_not_in_tier");
  } else if (schemes.includes("bearer")) {
    add(codes, 401, "unauthorized", "token_expired");
    if (path.startsWith("/api/v1/admin/")) add(codes, 403, "forbidden");
  }
  if (path !== "/api/v1/health") add(codes, 429, "rate_limit_exceeded");
  const write = upper !== "GET" && upper !== "HEAD";
  const repeatable = underJsonContract(path) && path !== "/api/v1/health";
  if ((op.parameters?.length ?? 0) > 0 || op.requestBody || write || repeatable) add(codes, 400, "validation_error");
  if (write) add(codes, 413, "payload_too_large");
  add(codes, 500, "internal_error");
  add(codes, 503, "service_unavailable", "actor_unavailable");
  return codes;
}

function envelopeWithCodes(codes: readonly string[]): Json {
  return {
    allOf: [{ $ref: ENVELOPE_REF }, { type: "object", required: ["code"], properties: { code: { type: "string", enum: codes } } }],
  };
}

function errorResponse(codes: readonly string[], doc: OperationDoc | undefined, previous: Json | undefined): Json {
  const known = codes.map((c) => (isErrorCode(c) ? `\`${c}\` (${ERROR_TABLE[c].description.replace(/\.$/, "")})` : `\`${c}\``));
  // the route's own words, unless they are Elysia's placeholder or just a code the list names anyway
  const said = typeof previous?.description === "string" ? previous.description : "";
  const prose = said && !said.startsWith("Response for status") && !codes.includes(said) ? `${said.replace(/\.$/, "")}. ` : "";
  const own = doc?.errorSchema ? jsonSchema(doc.errorSchema) : undefined;
  const schema = own ? { anyOf: [envelopeWithCodes(codes), own] } : envelopeWithCodes(codes);
  // a chunked body is counted while it is read and refused at the same limit (gateway/plugins/body-limit.ts)
  const bare = codes.includes("payload_too_large") ? " The body limit applies to a declared Content-Length (refused unread) and to a chunked body (refused once it passes the limit)." : "";
  const out: Json = {
    description: `${prose}Codes: ${known.join("; ")}.${bare}`,
    content: { "application/json": { schema } },
    "x-error-codes": [...codes],
  };
  // RFC 9110 §15.5.2: every REST 401 carries a challenge (gateway/plugins/errors.ts `challenge`, docs/access.md)
  if (codes.includes("unauthorized") || codes.includes("token_expired")) out.headers = { "WWW-Authenticate": CHALLENGE_HEADER };
  return out;
}

const CHALLENGE_HEADER: Json = {
  description:
    'The credential to send: `ApiKey realm="api", header="X-Agent-Api-Key"` on /api/v1/agent/* routes; `Bearer realm="api"` (no token sent) or `Bearer realm="api", error="invalid_token"` (with `error_description` for an expired one) on session routes; `AP2-User-Authorization realm="api", field="payment_mandate.user_authorization", error="<reason>"` for an AP2 mandate whose user signature fails (`AGENT_TOKEN_INVALID`).',
  schema: { type: "string" },
};

function hasSchema(r: Json | undefined): boolean {
  const content = r?.content as Record<string, { schema?: Json }> | undefined;
  return !!content && Object.values(content).some((c) => c.schema && Object.keys(c.schema).length > 0);
}

function completeOperation(method: string, path: string, op: Operation, strict: TSchema | undefined, components: Json): void {
  const doc = OPERATIONS[`${method.toUpperCase()} ${path}`];
  if (doc?.security) op.security = doc.security;
  if (doc?.notes) op.description = op.description ? `${op.description.replace(/\.?\s*$/, ".")} ${doc.notes}` : doc.notes;
  if (doc?.body) {
    op.requestBody = { required: doc.body.required, content: { [doc.body.contentType ?? "application/json"]: { schema: jsonSchema(doc.body.schema) } } };
  }
  // the generator lists the form encodings Elysia could parse; the API refuses them (gateway/plugins/json-body.ts)
  const content = op.requestBody?.content;
  if (content && underJsonContract(path)) for (const type of Object.keys(content)) if (!JSON_CONTENT_TYPE.test(type)) delete content[type];
  // after operations.ts's body, which replaces the generated one on some strict routes (an optional body)
  const json = content?.["application/json"];
  if (strict && json?.schema) json.schema = closedBody(strict, json.schema as Json, components);
  const responses: Record<string, Json> = (op.responses ??= {});
  for (const s of doc?.success ?? []) {
    const key = String(s.status);
    if (hasSchema(responses[key]) && !s.replaces) continue;
    const r: Json = { description: s.description };
    if (s.schema) r.content = { [s.contentType ?? "application/json"]: { schema: jsonSchema(s.schema) } };
    if (s.status >= 300 && s.status < 400) r.headers = { Location: { description: s.location ? `\`${s.location}\`` : "Where to go next.", schema: { type: "string" } } };
    responses[key] = r;
  }
  const codes = ruleCodes(method, path, op);
  for (const [status, list] of Object.entries(doc?.errors ?? {})) add(codes, Number(status), ...list);
  for (const status of [...codes.keys()].sort((a, b) => a - b)) {
    responses[String(status)] = errorResponse([...codes.get(status)!], doc, responses[String(status)]);
  }
  for (const [status, description] of Object.entries(doc?.htmlErrors ?? {})) {
    const json = codes.has(Number(status)) ? responses[status] : undefined;
    const html = { "text/html": { schema: { type: "string", description: "An HTML page for the human." } } };
    responses[status] = json
      ? { ...json, description: `${description} ${json.description as string}`, content: { ...(json.content as Json), ...html } }
      : { description, content: html };
  }
  if (doc?.acpApiVersion) documentAcpApiVersion(op, doc.acpApiVersion);
  if (BRIDGED_WRITE.test(path) && (method === "post" || method === "put")) documentBridgeIdempotencyKey(op);
  if (REST_IDEMPOTENT_WRITES.has(`${method} ${path}`)) documentRestIdempotencyKey(op);
  for (const c of Object.values(op.requestBody?.content ?? {})) if (c.schema) c.schema = jsonNumbers(c.schema as Json);
  for (const p of (op.parameters ?? []) as { schema?: Json }[]) if (p.schema) p.schema = withoutStringDefault(p.schema);
  for (const [status, r] of Object.entries(responses)) {
    for (const c of Object.values((r.content ?? {}) as Record<string, { schema?: Json }>)) if (c.schema) c.schema = jsonNumbers(c.schema);
    r.headers = { ...commonHeaders(method, path, Number(status)), ...(r.headers as Json | undefined) };
  }
}

// ------------------------------------------------------------------------------------------------ strict bodies

/** The parts of a registered route read here (Elysia's InternalRoute): its transform hooks. */
interface RouteHooks {
  method: string;
  path: string;
  hooks?: { transform?: unknown };
}

/**
 * The schema each strict route checks, keyed as the document names its operation ("POST /api/v1/x/{id}"). Found in
 * the routes' own transform hooks (strict-body.ts `strictSchemaOf`), not in a list kept beside them: the document
 * marks what runs, and a route added with strictJsonBody or strictBody is marked without another line anywhere.
 */
export function strictBodiesOf(routes: readonly RouteHooks[]): Map<string, TSchema> {
  const out = new Map<string, TSchema>();
  for (const r of routes) {
    const schema = strictSchemaOf(r.hooks?.transform);
    if (schema) out.set(`${r.method.toUpperCase()} ${r.path.replace(/:([^/]+)/g, "{$1}")}`, schema);
  }
  return out;
}

const COMPONENT_PREFIX = "#/components/schemas/";

/**
 * `json` (the document's schema of a strict route's body) with `additionalProperties: false` on every object the
 * strict check treats as closed, found by walking the route's schema beside it with unknownKeyOf's rule
 * (strict-body.ts): an Object without an `additionalProperties` keyword is closed; an open object keeps its keyword
 * and its listed properties are still walked; records, `t.Unknown()` and any other kind are left as they are (the
 * check does not look into them). Array items and union members are walked pairwise.
 *
 * Always a new object: the route's TypeBox schemas are never touched (the same objects are MCP tools' input schemas
 * and actor message contracts), and a `$ref` is replaced by a marked copy of the component it names (a component may
 * also be the body of a route that is not strict). A key the check allows that the document's object does not list
 * (operations.ts writes some bodies by hand) is added from the route's schema: a closed object must not leave out a
 * key the route takes.
 */
export function closedBody(strict: TSchema, json: Json, components: Json, depth = 0): Json {
  if (depth > 64) return json;
  const ref = json.$ref;
  if (typeof ref === "string" && ref.startsWith(COMPONENT_PREFIX)) {
    const target = (components.schemas as Json | undefined)?.[ref.slice(COMPONENT_PREFIX.length)];
    if (target && typeof target === "object") {
      const { $ref: _, ...beside } = json;
      return closedBody(strict, { ...(JSON.parse(JSON.stringify(target)) as Json), ...beside }, components, depth + 1);
    }
    return json;
  }
  switch (strict[Kind]) {
    case "Object": {
      const props = (strict.properties ?? {}) as Record<string, TSchema>;
      const listed = (json.properties ?? {}) as Record<string, Json>;
      const properties: Record<string, Json> = { ...listed };
      for (const [key, inner] of Object.entries(props)) {
        properties[key] = listed[key] ? closedBody(inner, listed[key], components, depth + 1) : closedBody(inner, jsonSchema(inner), components, depth + 1);
      }
      const out: Json = { ...json, properties };
      const required = (strict.required ?? []) as string[];
      const missing = required.filter((k) => !((json.required as string[] | undefined) ?? []).includes(k));
      if (missing.length) out.required = [...((json.required as string[] | undefined) ?? []), ...missing];
      if (strict.additionalProperties === undefined || strict.additionalProperties === false) out.additionalProperties = false;
      return out;
    }
    case "Array": {
      const items = json.items;
      if (!strict.items || !items || typeof items !== "object" || Array.isArray(items)) return json;
      return { ...json, items: closedBody(strict.items as TSchema, items as Json, components, depth + 1) };
    }
    case "Union": {
      const members = (strict.anyOf ?? []) as TSchema[];
      const listed = json.anyOf;
      if (Array.isArray(listed) && listed.length === members.length) return { ...json, anyOf: listed.map((m: Json, i) => closedBody(members[i]!, m, components, depth + 1)) };
      // the generator writes an object-or-null union as one schema (`type: ["object", "null"]`)
      const notNull = members.filter((m) => m[Kind] !== "Null");
      return !Array.isArray(listed) && notNull.length === 1 ? closedBody(notNull[0]!, json, components, depth + 1) : json;
    }
    default:
      return json;
  }
}

// ------------------------------------------------------------------------------------------------ numbers

/**
 * The string half of Elysia's `t.Integer` / `t.Numeric` (a union of a numeric string and the number, meant for query
 * strings), when `s` is such a union: its two halves. gateway/plugins/json-numbers.ts has the TypeBox twin.
 */
function numericStringUnion(s: Json): { text: Json; number: Json } | undefined {
  const list = s.anyOf;
  if (!Array.isArray(list) || list.length !== 2) return undefined;
  const isText = (x: Json) => x?.type === "string" && (x.format === "integer" || x.format === "numeric");
  const isNumber = (x: Json) => x?.type === "integer" || x?.type === "number";
  const [a, b] = list as Json[];
  if (isText(a!) && isNumber(b!)) return { text: a!, number: b! };
  if (isText(b!) && isNumber(a!)) return { text: b!, number: a! };
  return undefined;
}

/**
 * `s` with each number-or-numeric-string union replaced by its number. A JSON body's numbers must be JSON numbers
 * (`strictBodyNumbers` makes every route refuse a string, also in the bodies written in operations.ts, which it
 * never sees), and answers are serialised with numbers: only a query or path value may be text.
 */
export function jsonNumbers(s: Json): Json {
  if (Array.isArray(s)) return s.map((x) => (x && typeof x === "object" ? jsonNumbers(x as Json) : x)) as unknown as Json;
  const union = numericStringUnion(s);
  if (union) {
    const { anyOf: _, ...outer } = s;
    return { ...outer, ...union.number };
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) out[k] = v && typeof v === "object" ? jsonNumbers(v as Json) : v;
  return out;
}

/** A query or path integer is text, but Elysia's string half says `default: 0`, which is no route's default. */
function withoutStringDefault(s: Json): Json {
  const union = numericStringUnion(s);
  if (!union || union.text.default === s.default) return s;
  const { default: _, ...text } = union.text;
  return { ...s, anyOf: (s.anyOf as Json[]).map((x) => (x === union.text ? text : x)) };
}

// ------------------------------------------------------------------------------------------------ headers

const header = (description: string, schema: Json, required = true): Json => ({ description, required, schema });
const count = { type: "integer", minimum: 0 };
const RATE = {
  Limit: "Requests allowed in the window of the tightest bucket that applies (the key's tier, the per-IP or per-user global one, or a public route's).",
  Remaining: "Requests left in that window.",
  Reset: "Unix time (seconds) when that window resets: on a 429, wait until then.",
} as const;
const NOT_ADMITTED = " Absent when the request failed before its rate admission (a declared Content-Length over the limit, some 5xx).";

/** `components.headers`: each declared once, referenced by every response (the document would triple in size). */
export const HEADER_COMPONENTS: Record<string, Json> = {
  RequestId: header("The caller's X-Request-Id when it is a sane token, else a fresh id: quote it when reporting a problem.", { type: "string" }),
  AgentCommerce: header("Transparency: an agent-commerce surface.", { type: "string", enum: ["1"] }),
  InitiatedBy: header("Transparency: the request is taken as initiated by an AI agent.", { type: "string", enum: ["ai-agent"] }),
  AiActTransparency: header("Transparency: a transactional or state-changing request (every method but GET, HEAD and OPTIONS).", { type: "string", enum: ["agent-initiated-transaction"] }),
  ...Object.fromEntries(Object.entries(RATE).flatMap(([k, d]) => [[`RateLimit${k}`, header(d, count)], [`RateLimit${k}IfAdmitted`, header(d + NOT_ADMITTED, count, false)]])),
  RetryAfter: header("Seconds to wait before retrying.", count),
  AcpApiVersion: header("The ACP API version the request was served in (the one it named, or 2025-09-29 when it named none).", { type: "string", enum: [...ACP_API_VERSIONS] }),
  AcpApiVersionIfServed: header(
    "The ACP API version the request was served in. Absent when it was refused before its version was read (the key check, a rate limit, a body over the limit, an API-Version not served) or, on POST /api/v1/agent/checkout, when the request was not bridged as ACP.",
    { type: "string", enum: [...ACP_API_VERSIONS] },
    false,
  ),
  RetryAfterIfKnown: header(
    "Seconds to wait before retrying: sent with service_unavailable and temporarily_unavailable (also on OAuth's HTML pages and the health probe's 503); not with actor_unavailable or the upstream codes (retry with backoff).",
    count,
    false,
  ),
};
const ref = (name: keyof typeof HEADER_COMPONENTS & string): Json => ({ $ref: `#/components/headers/${name}` });

/** Operators' probes: no rate-limit layer, so no X-RateLimit-* (gateway/plugins/rate-limit.ts `hasOwnLayer`). */
const UNLIMITED_PATHS = new Set(["/api/v1/health", "/health", "/metrics"]);
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The headers every answer of an operation carries (set before routing, so errors carry them too):
 * - X-Request-Id (gateway/plugins/request-id.ts) and the transparency headers (gateway/plugins/transparency.ts:
 *   X-Agent-Commerce, X-Initiated-By; X-AI-Act-Transparency on every method but GET/HEAD/OPTIONS);
 * - X-RateLimit-* except on the health probe; not promised on a 413 (a declared Content-Length over the limit is
 *   refused in the edge hook, before admission) or a 5xx;
 * - Retry-After on a 429, and on the 503s that have a known wait (service_unavailable, temporarily_unavailable).
 */
export function commonHeaders(method: string, path: string, status: number): Json {
  const out: Json = { "X-Request-Id": ref("RequestId"), "X-Agent-Commerce": ref("AgentCommerce"), "X-Initiated-By": ref("InitiatedBy") };
  if (!SAFE_METHODS.has(method.toUpperCase())) out["X-AI-Act-Transparency"] = ref("AiActTransparency");
  if (!UNLIMITED_PATHS.has(path)) {
    const suffix = status !== 413 && status < 500 ? "" : "IfAdmitted";
    for (const k of Object.keys(RATE)) out[`X-RateLimit-${k}`] = ref(`RateLimit${k}${suffix}`);
  }
  if (status === 429) out["Retry-After"] = ref("RetryAfter");
  if (status === 503) out["Retry-After"] = ref("RetryAfterIfKnown");
  return out;
}

/**
 * ACP's `API-Version` on a route that reads it (gateway/bridge/acp.ts `acpVersioned`, docs/protocols.md "API version"):
 * the request header (optional: a request without it is served as 2025-09-29; one naming another version is 400
 * `unsupported_api_version`, whose code operations.ts lists), and the echo on every answer served. `scope` "acp": POST
 * /agent/checkout reads it only on a request bridged as ACP, so the echo is never promised there.
 */
function documentAcpApiVersion(op: Operation, scope: "always" | "acp"): void {
  const when = scope === "acp" ? " Read only when the request is bridged as ACP (x-protocol: acp, or an ACP body)." : "";
  const parameter = {
    name: ACP_API_VERSION_HEADER,
    in: "header",
    required: false,
    description: `The ACP API version the client speaks (ACP's RFC has clients send it on every request). Served: ${ACP_API_VERSIONS.join(", ")}, each in its own request and answer shapes (the bodies' and answers' schemas list both); without the header the request is served as ${ACP_DEFAULT_API_VERSION}. Another value (another dated version such as 2026-01-30, \`latest\`, empty, several) is refused before any work with 400 \`unsupported_api_version\` (ACP error shape, top-level \`supported_versions\`); nothing is recorded under the Idempotency-Key.${when}`,
    schema: { type: "string", enum: [...ACP_API_VERSIONS], example: ACP_DEFAULT_API_VERSION },
  };
  op.parameters = [...(op.parameters ?? []).filter((p) => (p as { name?: string }).name?.toLowerCase() !== ACP_API_VERSION_HEADER.toLowerCase()), parameter];
  for (const [status, r] of Object.entries(op.responses ?? {})) {
    const served = scope === "always" && Number(status) >= 200 && Number(status) < 300;
    r.headers = { ...(r.headers as Json | undefined), [ACP_API_VERSION_HEADER]: ref(served ? "AcpApiVersion" : "AcpApiVersionIfServed") };
  }
}

/** The protocol bridges' routes, whose writes read an `Idempotency-Key` header (gateway/bridge/common.ts withIdempotency). */
const BRIDGED_WRITE = /^\/api\/v1\/agent\/(acp|ucp|ap2)\//;

/**
 * The bridges' `Idempotency-Key` request header (docs/protocols.md "Idempotency"; review V-4: a rolled-back payment's
 * answer tells ACP/UCP clients to complete again under a new one, and no operation declared it).
 */
function documentBridgeIdempotencyKey(op: Operation): void {
  const parameter = {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "Scoped to (protocol, agent key). The same key with the same method, path and body replays the stored answer (`Idempotent-Replayed: true`; a non-retryable refusal too); while the first is still running, 409 CHECKOUT_ALREADY_IN_PROGRESS; with a different request, 409 IDEMPOTENCY_KEY_CONFLICT. A retryable failure (5xx) keeps nothing, so its retry runs. Without it, every request runs (a completion still never charges twice: the cart's own key is derived from the session or mandate).",
    schema: { type: "string", minLength: 1, maxLength: 255 },
  };
  op.parameters = [...(op.parameters ?? []).filter((p) => (p as { name?: string }).name?.toLowerCase() !== "idempotency-key"), parameter];
}

/** The REST writes that read an `Idempotency-Key` header beside the body's `idempotency_key` (gateway/rest/idempotency-key.ts). */
const REST_IDEMPOTENT_WRITES: ReadonlySet<string> = new Set(["post /api/v1/agent/checkout", "post /api/v1/agent/orders/{orderId}/refund"]);

/**
 * Their `Idempotency-Key` request header: read, and documented only in the body field's text, so a client generated
 * from the document never offered it (helper A, session 22). A request bridged as ACP/UCP/AP2 through the checkout
 * route follows its protocol's rules for it (docs/protocols.md "Idempotency").
 */
function documentRestIdempotencyKey(op: Operation): void {
  const parameter = {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "The same key as the body's `idempotency_key` (send either; both, and they must be equal ignoring case, else 400 INVALID_ARGUMENT): a UUID v4, stored lowercased. A retry with the key returns the first answer's outcome instead of acting twice; the key with another request is 409 IDEMPOTENCY_KEY_CONFLICT.",
    schema: { type: "string", format: "uuid" },
  };
  op.parameters = [...(op.parameters ?? []).filter((p) => (p as { name?: string }).name?.toLowerCase() !== "idempotency-key"), parameter];
}

/**
 * The generated document with every operation completed (a new object; the input is not changed). Without `$id`s:
 * TypeBox's ErrorEnvelope carries `$id: "#/components/schemas/ErrorEnvelope"`, so a route's error responses that
 * operations.ts does not (yet) replace gave one `$id` to several schemas, and a JSON Schema validator refused the whole
 * document (ajv: "resolves to more than one schema"; test/unit/openapi-no-schema-ids.test.ts). Every schema is named
 * by its place in the document and the `$ref`s to it, as jsonSchema() already does for the ones it writes.
 */
export function completeDocument(generated: OpenApiDocument, strictBodies: ReadonlyMap<string, TSchema> = new Map()): OpenApiDocument {
  const doc = JSON.parse(JSON.stringify(generated, (k, v: unknown) => (k === "$id" ? undefined : v))) as OpenApiDocument;
  doc.components ??= {};
  doc.components.schemas = { ...doc.components.schemas, ErrorEnvelope: jsonSchema(ErrorEnvelope) };
  doc.components.headers = { ...(doc.components.headers as Json | undefined), ...HEADER_COMPONENTS };
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (METHODS.has(method)) completeOperation(method, path, op, strictBodies.get(`${method.toUpperCase()} ${path}`), doc.components);
    }
  }
  return doc;
}

/**
 * Every route of the app `plugin` is mounted in, as the generator reads them (its `app.getGlobalRoutes()`: once
 * mounted, a plugin's answers its parent's; its own `routes` are only the plugin's). Protected in Elysia's types.
 */
function appRoutes(plugin: object): readonly RouteHooks[] {
  return (plugin as unknown as { getGlobalRoutes(): readonly RouteHooks[] }).getGlobalRoutes();
}

/** Per generated document: the completed copy, serialised once (~0.9 MB, a third of it header references; serialising it per request cost ~5 ms at half that size). */
const completed = new WeakMap<object, string>();
/** Per generated document and coding: the completed text compressed once (the compression plugin would redo it per request). */
const compressed = new WeakMap<object, Partial<Record<Coding, Uint8Array<ArrayBuffer>>>>();

function isDocument(v: unknown): v is OpenApiDocument {
  return typeof v === "object" && v !== null && !(v instanceof Response) && "paths" in v && "openapi" in v;
}

/**
 * @elysiajs/openapi with its document completed. The plugin caches its document until routes are added; the
 * completed copy is cached per generated document, as text, so the work (and the serialising) is done once.
 */
export function openapiDocument(config: Parameters<typeof openapi>[0]) {
  const plugin = new Elysia({ name: "openapi-document" });
  return plugin
    .onAfterHandle(({ request, responseValue, set }) => {
      if (!isDocument(responseValue)) return;
      let text = completed.get(responseValue);
      if (text === undefined) completed.set(responseValue, (text = JSON.stringify(completeDocument(responseValue, strictBodiesOf(appRoutes(plugin))))));
      // a fresh Response per request from the cached text; the request's headers (request id, rate limits) still apply
      const headers: Record<string, string> = { ...(set.headers as Record<string, string>), "content-type": "application/json; charset=utf-8" };
      const coding = text.length >= COMPRESS_MIN_BYTES ? acceptedCoding(request) : undefined;
      if (coding === undefined) return new Response(text, { headers });
      // compressed once per document and coding, as the compression plugin would send it (it leaves an answer that
      // has Content-Encoding alone): ~1 MB of zstd per request on a public route was ~0.6-1 ms of CPU (review R-4)
      let variants = compressed.get(responseValue);
      if (variants === undefined) compressed.set(responseValue, (variants = {}));
      const bytes = (variants[coding] ??= compressBody(text, coding));
      return new Response(bytes, { headers: { ...headers, "content-encoding": coding, vary: withVary(headers.vary) } });
    })
    .use(openapi({ ...config, provider: null }))
    // our own docs page: the plugin's loads Scalar @latest from a CDN with no integrity or CSP (docs-page.ts)
    .get(
      config?.path ?? "/openapi",
      ({ set }) => {
        Object.assign(set.headers, docsPageHeaders());
        return docsPageHtml({ title: config?.documentation?.info?.title ?? "API reference", specPath: config?.specPath ?? "/openapi/json" });
      },
      { detail: { hide: true } },
    );
}
