/**
 * Request body limits per surface (the spec leaves payload limits open; docs/decisions.md): agent and account
 * routes take small JSON bodies (1 MiB), merchant ingestion takes batches of up to 1,000 products (8 MiB), the
 * dashboard's JSONL upload up to 20 MiB. Checked on Content-Length before the body is read; a chunked body with
 * no length is bounded by the server-wide cap (`maxRequestBodySize` in gateway/boot.ts).
 */
import { errorBody } from "../envelope.ts";

const MiB = 1024 * 1024;
export const BODY_LIMITS: readonly { prefix: string; bytes: number }[] = [
  { prefix: "/dashboard", bytes: 20 * MiB },
  { prefix: "/api/v1/merchant/", bytes: 8 * MiB },
];
export const DEFAULT_BODY_LIMIT = 1 * MiB;
/** The server-wide cap: the largest per-surface limit plus room for form encoding. */
export const SERVER_BODY_CAP = 21 * MiB;

export function bodyLimitFor(pathname: string): number {
  for (const l of BODY_LIMITS) if (pathname.startsWith(l.prefix)) return l.bytes;
  return DEFAULT_BODY_LIMIT;
}

/** A 413 response when the declared body is larger than the path allows, else undefined. */
export function refuseOversizedBody(request: Request, pathname: string, headers: Record<string, string | number>): Response | undefined {
  const length = request.headers.get("content-length");
  if (!length) return undefined;
  const limit = bodyLimitFor(pathname);
  if (Number(length) <= limit) return undefined;
  return new Response(JSON.stringify(errorBody("payload_too_large", `Request body exceeds ${limit} bytes for ${pathname}.`, { limitBytes: limit })), {
    status: 413,
    headers: { ...(headers as Record<string, string>), "content-type": "application/json", connection: "close" },
  });
}
