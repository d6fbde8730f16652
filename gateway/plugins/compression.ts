/**
 * Large JSON answers go out compressed (zstd, else gzip) when the request's Accept-Encoding allows it.
 *
 * Why at least COMPRESS_MIN_BYTES (8 KiB):
 * - bandwidth: a default search answer (~16-18 KB) becomes ~2-3 KB, MCP tools/list (~130 KB) ~12 KB, the OpenAPI
 *   document (~1.1 MB) ~47 KB;
 * - CPU: Bun (1.4.5) writes an answer produced after a real async hop (a Postgres or NATS reply, a timer) whose head
 *   and body pass uWS's ~16 KB cork buffer uncorked, one sendto() per status-line piece, header name, ": ", value
 *   and CRLF (~47 syscalls for one search answer, ~0.2-0.3 ms of kernel CPU; oven-sh/bun PR #41341). Compressed, it
 *   fits the buffer and leaves in one send, for ~20 us of zstd level 1. 8 KiB leaves room for the head (~1 KB of
 *   headers) and for bodies that grow with a longer query;
 * - BREACH: a compressed answer's length leaks how well a secret in it compresses against text the attacker put next
 *   to it. The answers that carry secrets are small (a login token, a new agent key's plaintext, an OAuth token), so
 *   they stay below the threshold and are never compressed; HTML (the dashboard's pages carry CSRF tokens and reflect
 *   input) and HTTP error answers (which echo the caller's input) are never compressed whatever their size. An MCP
 *   tool error travels in a 200 JSON-RPC answer and is compressed from the threshold like any other: no answer that
 *   carries a secret reaches 8 KiB today, which is what keeps them identity, not a rule enforced here (review R-5).
 *
 * Never compressed: HEAD, any status outside 2xx and 204/206, an answer that already has Content-Encoding or an ETag
 * (a strong validator names one representation), anything not JSON (text/event-stream above all: the MCP SDK's
 * streams must keep streaming, and so are never read here), bodies under the threshold, and the native health routes
 * (Bun serves them ahead of Elysia, gateway/app.ts, so they never reach this hook).
 *
 * The hook is Elysia's mapResponse: it runs after the handler and after the error plugin's onError, so it sees the
 * envelope objects, the strings the MCP fast path answers with (gateway/mcp/server.ts `respond`) and the Response
 * objects some routes return (the OpenAPI document, the bridges). Status and headers stay on Elysia's `set` for
 * objects and strings, so the metrics and request-log hook (metrics.ts, after the response) reads the same status;
 * for a Response the status is copied to `set` first, for the same reason.
 */
import { Elysia } from "elysia";

/** Bodies of at least this many bytes may be compressed (see the header for why 8 KiB). */
export const COMPRESS_MIN_BYTES = 8 * 1024;

/**
 * Levels measured on this machine (Bun 1.4.5) on a 16 KB search answer, a 134 KB tools/list and the 1.1 MB OpenAPI
 * document: zstd 1 gives 13.8 % / 9.2 % / 4.3 % of the size in 19 / 102 / 617 us (levels 2-3: the same size within
 * 1-7 %, no faster); gzip 1 gives 17.7 % / 17.5 % / 10.3 % in 25 / 134 / 1004 us, gzip 3 13.7 % / 12.2 % / 7.2 % in
 * 33 / 314 / 1905 us. The point is CPU per request, so the cheapest level of each; brotli (quality 1: 51 / 138 / 745
 * us) is never cheaper than zstd and every client that offers it here offers gzip or zstd too.
 */
const ZSTD_LEVEL = 1;
const GZIP_LEVEL = 1;

export type Coding = "zstd" | "gzip";

/** What Elysia's Response.json would have said: JSON bodies keep exactly the content type they had. */
const JSON_CONTENT_TYPE = "application/json;charset=utf-8";

/** application/json, application/*+json, with or without parameters, in any letter case. */
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

const Q_VALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/**
 * The coding to answer with for an Accept-Encoding value (RFC 9110 §12.5.3), or undefined for identity. Each listed
 * coding has its q (1 when absent; 0 refuses it); `*` stands for any coding not listed by name; `x-gzip` is gzip.
 * identity is acceptable unless refused, and wins when the client ranks it above every coding we have (`gzip;q=0.5,
 * identity`); when not listed it ranks below every listed coding. Between equal q, zstd before gzip (smaller, cheaper).
 * A malformed element (a bad q) is ignored, as if not sent.
 */
export function chooseCoding(acceptEncoding: string): Coding | undefined {
  const q: Record<string, number> = {};
  for (const element of acceptEncoding.split(",")) {
    const [rawName, ...params] = element.split(";");
    let name = rawName!.trim().toLowerCase();
    if (name === "") continue;
    if (name === "x-gzip") name = "gzip";
    let weight = 1;
    let malformed = false;
    for (const param of params) {
      const eq = param.indexOf("=");
      if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "q") continue;
      const value = param.slice(eq + 1).trim();
      if (!Q_VALUE.test(value)) malformed = true;
      else weight = Number(value);
    }
    if (!malformed) q[name] = Math.max(weight, name in q ? q[name]! : 0);
  }
  const star = q["*"];
  const of = (coding: string) => q[coding] ?? star ?? 0;
  const zstd = of("zstd");
  const gzip = of("gzip");
  const best = Math.max(zstd, gzip);
  if (best === 0) return undefined;
  // identity named (or reached through `*`) above the best coding: the client asked for it
  const identity = q.identity ?? star;
  if (identity !== undefined && identity > best) return undefined;
  return zstd >= gzip ? "zstd" : "gzip";
}

/** Parsed Accept-Encoding values: clients send a handful of distinct ones; the map is dropped when it fills. */
const chosen = new Map<string, Coding | null>();
const CHOSEN_MAX = 256;

function codingFor(request: Request): Coding | undefined {
  const header = request.headers.get("accept-encoding");
  if (header === null) return undefined;
  let coding = chosen.get(header);
  if (coding === undefined) {
    if (chosen.size >= CHOSEN_MAX) chosen.clear();
    coding = chooseCoding(header) ?? null;
    chosen.set(header, coding);
  }
  return coding ?? undefined;
}

/**
 * The coding a request's answer may be sent in (undefined: identity), by the hook's own rules on the request: for a
 * route that serves the same large body over and over and keeps it compressed itself (the OpenAPI document: review
 * R-4, ~0.6-1 ms of zstd per request on a public route). Such an answer carries Content-Encoding, so the hook leaves it.
 */
export function acceptedCoding(request: Request): Coding | undefined {
  return request.method === "HEAD" ? undefined : codingFor(request);
}

/** A body compressed as the hook would (same codings and levels). */
export function compressBody(body: string | Uint8Array<ArrayBuffer>, coding: Coding): Uint8Array<ArrayBuffer> {
  return compress(body, coding);
}

/** Vary with Accept-Encoding added to what is there (another header's Vary stays; `*` already covers it). */
export function withVary(existing: string | null | undefined): string {
  if (!existing) return "Accept-Encoding";
  if (/(?:^|,)\s*(?:\*|accept-encoding)\s*(?:,|$)/i.test(existing)) return existing;
  return `${existing}, Accept-Encoding`;
}

function compress(body: string | Uint8Array<ArrayBuffer>, coding: Coding): Uint8Array<ArrayBuffer> {
  // a fresh Buffer over its own ArrayBuffer (never shared memory), which Bun's types leave open
  return coding === "zstd" ? (Bun.zstdCompressSync(body, { level: ZSTD_LEVEL }) as Uint8Array<ArrayBuffer>) : Bun.gzipSync(body, { level: GZIP_LEVEL });
}

/** A body's size in bytes is known from its UTF-16 length only at the ends; in between it is counted. */
function atLeastThreshold(text: string): boolean {
  if (text.length >= COMPRESS_MIN_BYTES) return true;
  if (text.length * 3 < COMPRESS_MIN_BYTES) return false;
  return Buffer.byteLength(text) >= COMPRESS_MIN_BYTES;
}

/** The parts of Elysia's `set` read and written here. */
interface SetLike {
  status?: number | string;
  headers: Record<string, string | number>;
}

/** 2xx with content (204 has none; a 206 is a byte range of the identity body). */
const compressibleStatus = (status: number) => status >= 200 && status < 300 && status !== 204 && status !== 206;

/**
 * An object or string answer whose status and headers are on `set`: the bytes to send, compressed, or the JSON text
 * (Elysia sends a string as it is; the content type is set so it stays JSON), or the value untouched when it is not
 * ours to compress.
 */
function mapValue(value: unknown, set: SetLike, coding: Coding): unknown {
  const headers = set.headers;
  const type = headers["content-type"];
  let text: string;
  if (typeof value === "string") {
    // a string is JSON only when the route said so (the MCP fast path); Elysia sends others as text/plain
    if (typeof type !== "string" || !JSON_TYPE.test(type)) return value;
    text = value;
  } else {
    if (typeof value !== "object" || value === null || (type !== undefined && (typeof type !== "string" || !JSON_TYPE.test(type)))) return value;
    // plain envelopes and arrays only: Elysia answers files, streams, generators and Responses in their own ways
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return value;
    // the same text Elysia's Response.json would send, made once: when it stays small it is sent as is
    text = JSON.stringify(value);
    if (type === undefined) headers["content-type"] = JSON_CONTENT_TYPE;
  }
  if (!atLeastThreshold(text)) return text;
  headers.vary = withVary(headers.vary as string | undefined);
  headers["content-encoding"] = coding;
  return compress(text, coding);
}

/**
 * A Response (the OpenAPI document, the bridges' answers): a JSON body of at least the threshold is read and sent
 * compressed, as a promise Elysia awaits; anything else is returned as it is, unread.
 */
function mapWholeResponse(res: Response, set: SetLike, coding: Coding): Response | Promise<Response> {
  const type = res.headers.get("content-type");
  if (res.body === null || res.bodyUsed || type === null || !JSON_TYPE.test(type) || !compressibleStatus(res.status)) return res;
  if (res.headers.has("content-encoding") || res.headers.has("etag") || set.headers.etag !== undefined) return res;
  const length = res.headers.get("content-length");
  if (length !== null && Number(length) < COMPRESS_MIN_BYTES) return res;
  // Elysia takes a Response's own status unless it says 200 (then `set.status`): the after-response hook reads
  // `set.status` only, and the value it sees is now a promise
  if (res.status !== 200) set.status = res.status;
  const setVary = set.headers.vary;
  return res.bytes().then((bytes) => {
    const headers = new Headers(res.headers);
    if (bytes.byteLength < COMPRESS_MIN_BYTES) return new Response(bytes, { status: res.status, statusText: res.statusText, headers });
    headers.set("vary", withVary(res.headers.get("vary") ?? (setVary === undefined ? undefined : String(setVary))));
    headers.set("content-encoding", coding);
    headers.delete("content-length");
    return new Response(compress(bytes, coding), { status: res.status, statusText: res.statusText, headers });
  });
}

/** Whether this answer may be compressed at all, before its body is looked at. */
function eligible(request: Request, set: SetLike): boolean {
  if (request.method === "HEAD") return false;
  const status = set.status ?? 200;
  if (typeof status !== "number" || !compressibleStatus(status)) return false;
  return set.headers["content-encoding"] === undefined && set.headers.etag === undefined;
}

/** The parts of the mapResponse context read here (destructured in the hook: see errors.ts on Elysia's inference). */
interface MapContext {
  request: Request;
  set: SetLike;
  responseValue: unknown;
}

/**
 * The hook. It always gives a value back, the answer untouched when it is not compressed: Elysia's global error
 * handler sends whatever this hook gives, undefined included (an empty body). Elysia reads a hook's source to guess
 * whether it may be asynchronous (`return f(`, `=> f(`, the words async/await) and then makes every route's handler
 * asynchronous; this one's source does not match (test/unit/response-compression.test.ts checks it).
 */
export function compressAnswer({ request, set, responseValue }: MapContext): unknown {
  const coding = eligible(request, set) ? codingFor(request) : undefined;
  if (coding === undefined) return responseValue;
  const mapped = responseValue instanceof Response ? mapWholeResponse(responseValue, set, coding) : mapValue(responseValue, set, coding);
  return mapped;
}

export const compression = new Elysia({ name: "compression" }).mapResponse(
  { as: "global" },
  // Elysia types a mapResponse hook as giving a Response or nothing; it sends any value the way it sends a handler's
  compressAnswer as unknown as (context: MapContext) => Response,
);
