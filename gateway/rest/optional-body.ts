/**
 * Parser for routes whose JSON body is optional (`body: t.Optional(t.Object(...))`). Elysia turns a body it cannot
 * parse, or one sent with another content type, into "no body", and coerces `[]`/`42` to `{}`. On these routes "no
 * body" means the default action (a FULL refund, a 24 h webhook-secret overlap, every store, a test-network wallet),
 * so a truncated `{"amount": 100` must not silently become it. Empty is no body, whatever the content type; anything
 * else must be a JSON object sent as application/json (gateway/plugins/json-body.ts: the same 400 validation_error
 * as every other route of the API).
 */
import { contentTypeRefusal, isJsonContentType, isPlainObject, notAnObjectRefusal } from "../plugins/json-body.ts";

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
