/**
 * Parser for routes whose JSON body is optional (`body: t.Optional(t.Object(...))`). Elysia turns a body it cannot
 * parse, or one sent with another content type, into "no body", and coerces `[]`/`42` to `{}`. On these routes "no
 * body" means the default action (a FULL refund, a 24 h webhook-secret overlap, every store, a test-network wallet),
 * so a truncated `{"amount": 100` must not silently become it. Empty is no body; anything else, whatever its content
 * type, must be a JSON object (a parse error here is the envelope's 400 validation_error).
 */
/** Requests whose body this parser read as JSON whatever their content type (the error plugin then blames a field, not the type). */
export const parsedAsJson = new WeakSet<Request>();

export async function optionalObjectBody({ request }: { request: Request }): Promise<Record<string, unknown>> {
  parsedAsJson.add(request);
  const text = await request.text();
  if (!text.trim()) return {};
  const v: unknown = JSON.parse(text);
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new SyntaxError("The request body must be a JSON object.");
  return v as Record<string, unknown>;
}
