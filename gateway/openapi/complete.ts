/**
 * Completes the generated OpenAPI document so it lists every answer: for every operation its success status with a
 * schema (operations.ts, where the route declares none), every error status it can return with the error envelope,
 * and per status the `code`s (`x-error-codes`, and an enum on `code`). Codes shared by a kind of route are added by
 * rule here (`ruleCodes`); a route's own codes come from its row in operations.ts.
 *
 * The document is built by @elysiajs/openapi from the routes; `openapiDocument` wraps that plugin and completes its
 * answer (a hook local to the plugin's two routes, so no other route pays for it), once per generated document.
 */
import { docsPageHeaders, docsPageHtml } from "./docs-page.ts";
import { openapi } from "@elysiajs/openapi";
import { Elysia, type TSchema } from "elysia";
import { findRouteRule } from "../../actors/agent/access.ts";
import { JSON_CONTENT_TYPE, underJsonContract } from "../plugins/json-body.ts";
import { ERROR_TABLE, isErrorCode } from "../../actors/runtime/errors.ts";
import { ErrorEnvelope } from "../envelope.ts";
import { OPERATIONS, type OperationDoc } from "./operations.ts";

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
 * - a route with parameters or a body, and every write (a malformed JSON body is refused whatever the route
 *   reads): 400 validation_error (gateway/plugins/errors.ts);
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
  if ((op.parameters?.length ?? 0) > 0 || op.requestBody || write) add(codes, 400, "validation_error");
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

function completeOperation(method: string, path: string, op: Operation): void {
  const doc = OPERATIONS[`${method.toUpperCase()} ${path}`];
  if (doc?.security) op.security = doc.security;
  if (doc?.body) {
    op.requestBody = { required: doc.body.required, content: { [doc.body.contentType ?? "application/json"]: { schema: jsonSchema(doc.body.schema) } } };
  }
  // the generator lists the form encodings Elysia could parse; the API refuses them (gateway/plugins/json-body.ts)
  const content = op.requestBody?.content;
  if (content && underJsonContract(path)) for (const type of Object.keys(content)) if (!JSON_CONTENT_TYPE.test(type)) delete content[type];
  const responses: Record<string, Json> = (op.responses ??= {});
  for (const s of doc?.success ?? []) {
    const key = String(s.status);
    if (hasSchema(responses[key])) continue;
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
}

/** The generated document with every operation completed (a new object; the input is not changed). */
export function completeDocument(generated: OpenApiDocument): OpenApiDocument {
  const doc = JSON.parse(JSON.stringify(generated)) as OpenApiDocument;
  doc.components ??= {};
  doc.components.schemas = { ...doc.components.schemas, ErrorEnvelope: jsonSchema(ErrorEnvelope) };
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) if (METHODS.has(method)) completeOperation(method, path, op);
  }
  return doc;
}

/** Per generated document: the completed copy, serialised once (~0.5 MB; serialising it took ~5 ms a request). */
const completed = new WeakMap<object, string>();

function isDocument(v: unknown): v is OpenApiDocument {
  return typeof v === "object" && v !== null && !(v instanceof Response) && "paths" in v && "openapi" in v;
}

/**
 * @elysiajs/openapi with its document completed. The plugin caches its document until routes are added; the
 * completed copy is cached per generated document, as text, so the work (and the serialising) is done once.
 */
export function openapiDocument(config: Parameters<typeof openapi>[0]) {
  return new Elysia({ name: "openapi-document" })
    .onAfterHandle(({ responseValue, set }) => {
      if (!isDocument(responseValue)) return;
      let text = completed.get(responseValue);
      if (text === undefined) completed.set(responseValue, (text = JSON.stringify(completeDocument(responseValue))));
      // a fresh Response per request from the cached text; the request's headers (request id, rate limits) still apply
      return new Response(text, { headers: { ...(set.headers as Record<string, string>), "content-type": "application/json; charset=utf-8" } });
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
