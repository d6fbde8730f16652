/**
 * Parser for routes whose JSON body is optional (`body: t.Optional(t.Object(...))`). Elysia turns a body it cannot
 * parse, or one sent with another content type, into "no body", and coerces `[]`/`42` to `{}`. On these routes "no
 * body" means the default action (a FULL refund, a 24 h webhook-secret overlap, every store, a test-network wallet),
 * so a truncated `{"amount": 100` must not silently become it. Empty is no body, whatever the content type; anything
 * else must be a JSON object sent as application/json (gateway/plugins/json-body.ts: the same 400 validation_error
 * as every other route of the API).
 */
import { t } from "elysia";
import { contentTypeRefusal, isJsonContentType, isPlainObject, notAnObjectRefusal } from "../plugins/json-body.ts";
import { strictJsonBody } from "./strict-body.ts";

/** Requests whose body this parser read and checked (the JSON-only check then leaves an empty one alone). */
export const parsedAsJson = new WeakSet<Request>();

export async function optionalObjectBody({ request }: { request: Request }): Promise<Record<string, unknown>> {
  parsedAsJson.add(request);
  const text = await request.text();
  if (!text.trim()) return {};
  const type = request.headers.get("content-type");
  // thrown from a parser, these reach the error plugin wrapped in Elysia's ParseError (errors.ts unwraps them)
  if (!isJsonContentType(type)) throw contentTypeRefusal(type);
  const v: unknown = JSON.parse(text);
  if (!isPlainObject(v)) throw notAnObjectRefusal(v);
  return v;
}

/**
 * The options of a route that takes no body (an action named by its path: cancel, approve, redeliver, a DELETE):
 * `{ ...noBody(), params, response, detail }`. No body, an empty one or `{}` is the action, as before; any key is 400
 * validation_error naming it (details.field, details.allowed []) with nothing done, and a body that is no JSON object
 * is 400, as on every route with a body. Such routes ignored any body, so `{"amount": 500}` sent to a refund's
 * …/approve refunded the amount requested and answered 200, and `{"decision": "reject"}` to …/approve approved (helper C's three
 * routes of session 21, then helper E's sweep of gateway/rest). A fresh schema and hook per route: Elysia writes into
 * a route's body schema when it compiles its validator.
 */
export function noBody() {
  return { parse: optionalObjectBody, ...strictJsonBody(t.Optional(t.Object({}, { description: "No fields: send no body or {}." }))) };
}
