/**
 * Outbound HTTP to servers we do not control (a Client ID Metadata Document host, a merchant's platform endpoint):
 * the request and the reading of its answer, beside the SSRF guard (`infra/ssrf.ts`) that vets the URL first.
 *
 * - `fetchVetted` connects to the address the guard vetted, with the URL's own Host header and TLS server name, and
 *   never follows a redirect: fetching by name would resolve it a second time, and a rebinding DNS answer could
 *   then point the request at an internal address. Its deadline covers the body as well as the headers.
 * - `readBoundedBytes` / `readBoundedText` / `readBoundedJson` read an answer's body with a byte cap. A body is
 *   never read whole before its size is known: a Content-Length over the cap is refused before reading, and the
 *   stream is read chunk by chunk, counting bytes, and cancelled (the request aborted, which closes the connection)
 *   as soon as the count passes the cap. Without this an outside server could stream gigabytes into our memory
 *   until the deadline (security audit C-1: 3 CIMD requests took the gateway from 126 MB to 867 MB).
 *   Bytes are counted after Bun's transparent decompression, so a compressed bomb is bounded too (Bun inflates
 *   incrementally, at most 256 KiB a chunk: test/unit/outbound-http.test.ts pins it). A body whose
 *   Content-Encoding does not decode is `ResponseUndecodableError`: the server answered, with garbage.
 * - `discardBody` drops a body we do not use, so the connection is released at once.
 *
 * Every outside body we read goes through here; the caps are chosen by the caller, sized to what it needs
 * (docs/access.md, docs/mcp-tools.md).
 */
import type { VettedUrl } from "./ssrf.ts";

/** The answer's body is larger than the caller's cap (declared by Content-Length, or counted while reading). */
export class ResponseTooLargeError extends Error {
  override readonly name = "ResponseTooLargeError";
  constructor(
    readonly limitBytes: number,
    /** The Content-Length the server declared, when that is what refused it. */
    readonly declaredBytes?: number,
  ) {
    super(
      declaredBytes !== undefined
        ? `the answer declares ${declaredBytes} bytes, more than the ${limitBytes}-byte limit`
        : `the answer is longer than the ${limitBytes}-byte limit`,
    );
  }
}

/**
 * The answer's body does not decode as its Content-Encoding says (a corrupt gzip, deflate, brotli or zstd stream):
 * the server did answer, and asking again will not help, unlike a timeout or a reset.
 */
export class ResponseUndecodableError extends Error {
  override readonly name = "ResponseUndecodableError";
  constructor(readonly encodingError: string) {
    super(`the answer's body does not decode (${encodingError})`);
  }
}

/** Bun's decompression failures: a TypeError whose code names the decoder (`ZlibError`, `BrotliDecompressionError`, …). */
function decodeFailure(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^(ZlibError|BrotliDecompressionError|ZstdDecompressionError)$/.test(code) ? code : undefined;
}

/** Where a vetted URL is fetched: its vetted IP, with the name it was written with as Host and TLS server name. */
export function vettedTarget(vetted: VettedUrl): { target: URL; hostHeader: string; serverName?: string } {
  const target = new URL(vetted.url.href);
  target.hostname = vetted.family === 6 ? `[${vetted.address}]` : vetted.address;
  const serverName = vetted.url.protocol === "https:" && vetted.hostname !== vetted.address ? vetted.hostname : undefined;
  return { target, hostHeader: vetted.url.host, ...(serverName ? { serverName } : {}) };
}

export interface VettedInit extends Omit<RequestInit, "redirect" | "signal"> {
  /** Deadline of the whole exchange, headers and body. */
  timeoutMs: number;
  /** The caller's controller: `readBounded*` aborts it when the body passes the cap. */
  controller?: AbortController;
}

/** fetch() to the vetted address (no redirects: a 3xx is answered as it is, never followed). */
export async function fetchVetted(vetted: VettedUrl, init: VettedInit): Promise<Response> {
  const { timeoutMs, controller, headers: given, ...rest } = init;
  const { target, hostHeader, serverName } = vettedTarget(vetted);
  const headers = new Headers(given);
  headers.set("host", hostHeader);
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await fetch(target, {
      ...rest,
      headers,
      redirect: "manual",
      signal: controller ? AbortSignal.any([controller.signal, timeout]) : timeout,
      ...(serverName ? { tls: { serverName } } : {}),
    } as RequestInit);
  } catch (err) {
    // Bun decodes the body while reading it, but a small body may already be decoded before fetch() resolves
    const code = decodeFailure(err);
    throw code ? new ResponseUndecodableError(code) : err;
  }
}

/** Stops a body we will not read further: cancels its stream and aborts the request (closing the connection). */
async function stop(body: ReadableStream<Uint8Array> | ReadableStreamDefaultReader<Uint8Array> | null, controller?: AbortController): Promise<void> {
  await body?.cancel().catch(() => {});
  controller?.abort();
}

/** Drops the body of an answer whose content we do not use. */
export async function discardBody(res: Response, controller?: AbortController): Promise<void> {
  await stop(res.body, controller);
}

/**
 * The body's bytes, at most `maxBytes` of them; more (declared or counted) is `ResponseTooLargeError`, after the
 * stream was cancelled and `controller` aborted. A body that does not decode is `ResponseUndecodableError`. Errors
 * of the stream itself (the deadline, a reset) are rethrown.
 */
export async function readBoundedBytes(res: Response, maxBytes: number, controller?: AbortController): Promise<Uint8Array> {
  const declared = res.headers.get("content-length")?.trim();
  if (declared && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    await stop(res.body, controller);
    throw new ResponseTooLargeError(maxBytes, Number(declared));
  }
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) throw new ResponseTooLargeError(maxBytes);
      chunks.push(value);
    }
  } catch (err) {
    await stop(reader, controller);
    const code = decodeFailure(err);
    throw code ? new ResponseUndecodableError(code) : err;
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * The body as UTF-8 text (as `Response.text()`: a BOM is dropped, invalid sequences become U+FFFD), decoded from
 * the whole byte string so a character split across chunks is decoded whole. The cap is in bytes, not characters.
 */
export async function readBoundedText(res: Response, maxBytes: number, controller?: AbortController): Promise<string> {
  return new TextDecoder("utf-8").decode(await readBoundedBytes(res, maxBytes, controller));
}

/** The body parsed as JSON (a SyntaxError if it is not), read with the byte cap. */
export async function readBoundedJson(res: Response, maxBytes: number, controller?: AbortController): Promise<unknown> {
  return JSON.parse(await readBoundedText(res, maxBytes, controller)) as unknown;
}
