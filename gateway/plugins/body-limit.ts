/**
 * Request body limits per surface (the spec leaves payload limits open; docs/decisions.md): agent and account
 * routes take small JSON bodies (1 MiB), merchant ingestion takes batches of up to 1,000 products (8 MiB), the
 * dashboard's JSONL upload up to 20 MiB. A body with a Content-Length is checked before it is read; a chunked body
 * (no length) is counted while it is read and refused as soon as it passes the same limit. Both answers are ours:
 * 413 `payload_too_large` with the envelope, request id and headers (audit U LOW-4: Bun's own cap used to answer a
 * declared length over 21 MiB bare, without any of them). On an MCP endpoint the error plugin gives that 413 as a
 * JSON-RPC error instead of the envelope (gateway/mcp/oversize.ts).
 */
import { fail } from "../../actors/runtime/errors.ts";

const MiB = 1024 * 1024;
export const BODY_LIMITS: readonly { prefix: string; bytes: number }[] = [
  { prefix: "/dashboard", bytes: 20 * MiB },
  { prefix: "/api/v1/merchant/", bytes: 8 * MiB },
];
export const DEFAULT_BODY_LIMIT = 1 * MiB;
/**
 * Bun's `maxRequestBodySize` (gateway/boot.ts): as high as Bun takes, so it never answers before our limits do. Bun
 * refuses a declared length above it bare, before our code runs; with this value only lengths past 2^53 bytes (no
 * real client) are left to it. The bodies themselves stay bounded by the per-surface limits above: a declared
 * length is refused unread, a chunked body is cut at its limit (`limitStreamedBody`).
 */
export const SERVER_BODY_CAP = Number.MAX_SAFE_INTEGER;

export function bodyLimitFor(pathname: string): number {
  for (const l of BODY_LIMITS) if (pathname.startsWith(l.prefix)) return l.bytes;
  return DEFAULT_BODY_LIMIT;
}

/**
 * Throws 413 `payload_too_large` when the declared body is larger than the path allows (the error plugin answers it
 * with the envelope, the request's headers and `Connection: close`, and it is counted and logged like any other
 * answer; a Response returned from the request hook was neither). A chunked body (no Content-Length) gets its reads
 * bounded instead.
 */
export function refuseOversizedBody(request: Request, pathname: string): void {
  const length = request.headers.get("content-length");
  if (!length) {
    // HTTP/1.1: no Content-Length and no Transfer-Encoding means no body at all
    if (request.headers.has("transfer-encoding")) limitStreamedBody(request, bodyLimitFor(pathname), pathname);
    return;
  }
  const limit = bodyLimitFor(pathname);
  if (Number(length) <= limit) return;
  throw tooLarge(limit, pathname);
}

const tooLarge = (limit: number, pathname: string) => fail("payload_too_large", tooLargeText(limit, pathname), { limitBytes: limit });
const tooLargeText = (limit: number, pathname: string) => `Request body exceeds ${limit} bytes for ${pathname}.`;

/** Request methods that read the body: each is given the bounded stream instead of Bun's. */
const READERS = ["text", "json", "arrayBuffer", "bytes", "blob", "formData"] as const;

/**
 * Makes every read of this request's body (Elysia's parsers call `request.json()`/`text()`/`formData()`/
 * `arrayBuffer()`; a handler may read `request.body`) go through a stream that fails with 413 `payload_too_large`
 * once more than `limit` bytes have arrived: at most `limit` plus one network chunk is ever held. Only chunked
 * requests pay for this (rare; a request with a Content-Length keeps Bun's own reader untouched).
 */
export function limitStreamedBody(request: Request, limit: number, pathname: string): void {
  const source = request.body;
  if (!source) return;
  let seen = 0;
  const bounded = source.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > limit) controller.error(tooLarge(limit, pathname));
        else controller.enqueue(chunk);
      },
    }),
  );
  const contentType = request.headers.get("content-type");
  const asResponse = () => new Response(bounded, contentType ? { headers: { "content-type": contentType } } : undefined);
  Object.defineProperty(request, "body", { value: bounded, configurable: true });
  for (const name of READERS) {
    Object.defineProperty(request, name, { value: () => (asResponse() as unknown as Record<string, () => Promise<unknown>>)[name]!(), configurable: true });
  }
}
