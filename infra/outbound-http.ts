/**
 * Outbound HTTP to servers we do not control (a Client ID Metadata Document host, a merchant's platform endpoint):
 * the request and the reading of its answer, beside the SSRF guard (`infra/ssrf.ts`) that vets the URL first.
 *
 * - `fetchVetted` connects to an address the guard vetted, with the URL's own Host header and TLS server name, and
 *   never follows a redirect: fetching by name would resolve it a second time, and a rebinding DNS answer could
 *   then point the request at an internal address. Its deadline covers the body as well as the headers, and every
 *   address it tries. A name with several addresses (a dual-stack host, several A records) has its addresses'
 *   connects raced, Happy Eyeballs style (RFC 8305 §5), in the guard's order (`VettedUrl.addresses`): a bare TCP
 *   connect (`tcpConnectProbe`, closed at once, nothing written) to the first; the next one starts beside it when it
 *   has not connected within CONNECT_ATTEMPT_DELAY_MS (250 ms) or as soon as it failed (refused, unreachable, or no
 *   connect within CONNECT_ATTEMPT_MAX_MS); the first to connect wins, the others are aborted and their sockets
 *   closed, even those still connecting, and only the winner is fetched. The request is never sent to two addresses:
 *   the probes write nothing, and an address may be asked only while no connection for the fetch was ever
 *   established. Once one opened, any failure (a reset after the request was written, no headers in time) is the
 *   caller's, never retried elsewhere: the server may have read the request and acted on it (a /settle, a webhook).
 *   Probes exist because Bun's fetch has no connect deadline, and a fetch cannot be raced (it would send the request
 *   as soon as it connects). Every address is probed, the last one too: in a race the last cannot be fetched
 *   unprobed while an earlier probe is pending (both could end up sent), and the probe gives it a connect deadline
 *   like the others. When every probe failed, the last address is fetched directly with what the deadline has left,
 *   as the sequential attempts did (and a one-address name always does): every address failing ends as
 *   it did then (fetch's own refusal, which `neverConnected` recognises, or the deadline). A one-address name, or the
 *   one address left, is fetched directly, and so is an address that answered recently (`ANSWERED_TTL_MS`) when its
 *   turn comes with no probe pending.
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
import { connect } from "node:net";
import { addressFamily, type VettedUrl } from "./ssrf.ts";

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

/**
 * Where a vetted URL is fetched: one of its vetted IPs (the first by default), with the name it was written with as
 * Host and TLS server name.
 */
export function vettedTarget(vetted: VettedUrl, address: string = vetted.address): { target: URL; hostHeader: string; serverName?: string } {
  const target = new URL(vetted.url.href);
  target.hostname = addressFamily(address) === 6 ? `[${address}]` : address;
  const serverName = vetted.url.protocol === "https:" && vetted.hostname !== address ? vetted.hostname : undefined;
  return { target, hostHeader: vetted.url.host, ...(serverName ? { serverName } : {}) };
}

/**
 * Error codes of a connection that was never established (thrown by fetch or a TCP connect): refused, or no route to
 * the network or host. Nothing of the request left this process. Bun names some of them its own way
 * (`ConnectionRefused`, `FailedToOpenSocket`). Not here: DNS failures (the guard resolves, fetch never does) and TLS
 * refusals (a connection did open; callers that care, like the x402 facilitator client, add them), and anything after
 * the connection opened (a reset, a socket closed before the answer, an abort), which may come after the server read
 * the request.
 */
const NEVER_CONNECTED_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ConnectionRefused",
  "FailedToOpenSocket",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "ENETDOWN",
  "EHOSTDOWN",
  "EADDRNOTAVAIL",
]);

/** True when `err` (thrown by fetch) proves no connection was ever established, so nothing was sent. */
export function neverConnected(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && NEVER_CONNECTED_CODES.has(code);
}

/** A TCP connect that did not complete within its connect deadline (a black-holed address): nothing was sent. */
export class ConnectTimeoutError extends Error {
  override readonly name = "ConnectTimeoutError";
  readonly code = "ConnectTimeout";
  constructor(readonly address: string, readonly timeoutMs: number) {
    super(`connecting to ${address} took longer than ${timeoutMs} ms`);
  }
}

/**
 * RFC 8305's Connection Attempt Delay (§5: 250 ms recommended, at least 100 ms, at most 2 s): how long an address's
 * connect may stay pending before the next address's connect starts beside it. Long enough that a healthy address
 * (a loopback or same-region connect is a few ms, a far one 100-200 ms) nearly always connects before a second
 * handshake is started for nothing; short enough that a black-holed first address costs a quarter second, not its
 * whole connect deadline.
 */
export const CONNECT_ATTEMPT_DELAY_MS = 250;

/**
 * The longest one address's connect may take (RFC 8305's largest Connection Attempt Delay): enough for one lost
 * SYN's retransmission (1 s). Past it the address has failed; when every address has, the last one is fetched
 * directly with what the deadline has left (module comment). An address gets less when the deadline has less left.
 */
export const CONNECT_ATTEMPT_MAX_MS = 2_000;

/**
 * Opens a TCP connection to `address`:`port` within `ms` and closes it at once (nothing written), or rejects. When
 * `signal` aborts first it rejects with the signal's reason, and whatever socket it started is closed then.
 */
export type ConnectProbe = (address: string, port: number, ms: number, signal: AbortSignal) => Promise<void>;

export const tcpConnectProbe: ConnectProbe = (address, port, ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    // node:net, not Bun.connect: a node:net socket can be destroyed while its connect is still pending, which closes
    // it at once; Bun.connect's promise cannot be cancelled, so an abandoned connect to a black-holed address stayed
    // open in SYN-SENT for the kernel's whole SYN retry time (about two minutes on Linux). An IP literal is never
    // looked up.
    const socket = connect({ host: address, port });
    let settled = false;
    const finish = (err?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      // closed whether it connected or is still connecting: a probe never leaves a socket behind, a loser's neither
      socket.destroy();
      if (err === undefined) resolve();
      else reject(err);
    };
    const onAbort = () => finish(signal.reason);
    const timer = setTimeout(() => finish(new ConnectTimeoutError(address, ms)), ms);
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => finish());
    socket.on("error", (err: Error) => finish(err));
  });

/** Why a pending connect was stopped: another address connected first (RFC 8305: the others are cancelled). */
const LOST_RACE = "another address connected first";

/**
 * Races connect probes over `addresses` (RFC 8305 §5): the first address's probe starts at once, the next one when
 * the previous has not connected within CONNECT_ATTEMPT_DELAY_MS or as soon as it failed, and so on in the guard's
 * order; the first probe to connect wins and every other one still pending is aborted (its socket closed). An address
 * for which `trusted` is true (it answered recently), reached while no other probe is pending, wins without a probe:
 * nothing could connect before it. Resolves with the winner, and the addresses whose probe failed; with no winner
 * when every probe failed. Rejects with the signal's reason when `signal` aborts (the deadline, the caller).
 */
function raceConnects(
  addresses: readonly string[],
  port: number,
  probe: ConnectProbe,
  trusted: (address: string) => boolean,
  signal: AbortSignal,
  endsAt: number,
): Promise<{ winner?: string; failed: ReadonlySet<string> }> {
  return new Promise((resolve, reject) => {
    const losers = new AbortController();
    const attemptSignal = AbortSignal.any([signal, losers.signal]);
    const failed = new Set<string>();
    let started = 0;
    let pending = 0;
    let done = false;
    let delay: ReturnType<typeof setTimeout> | undefined;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(delay);
      signal.removeEventListener("abort", onAbort);
      losers.abort(new DOMException(LOST_RACE, "AbortError"));
      settle();
    };
    const onAbort = () => finish(() => reject(signal.reason));
    const startNext = () => {
      clearTimeout(delay);
      if (done) return;
      if (started === addresses.length) {
        if (pending === 0) finish(() => resolve({ failed }));
        return;
      }
      const address = addresses[started++]!;
      if (pending === 0 && trusted(address)) {
        finish(() => resolve({ winner: address, failed }));
        return;
      }
      pending++;
      const ms = Math.max(1, Math.floor(Math.min(CONNECT_ATTEMPT_MAX_MS, endsAt - performance.now())));
      let attempt: Promise<void>;
      try {
        attempt = probe(address, port, ms, attemptSignal);
      } catch (err) {
        attempt = Promise.reject(err);
      }
      attempt.then(
        () => finish(() => resolve({ winner: address, failed })),
        () => {
          // stopped because another address connected first (or the deadline passed): not a failure, and the address
          // stays a candidate should the winner's fetch be refused
          if (done) return;
          pending--;
          failed.add(address);
          // failed fast (refused, no route) or timed out: the next address need not wait for the delay
          startNext();
        },
      );
      if (started < addresses.length) delay = setTimeout(startNext, CONNECT_ATTEMPT_DELAY_MS);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    else startNext();
  });
}

export interface VettedInit extends Omit<RequestInit, "redirect" | "signal"> {
  /** Deadline of the whole exchange, headers and body. */
  timeoutMs: number;
  /** The caller's controller: `readBounded*` aborts it when the body passes the cap. */
  controller?: AbortController;
}

/**
 * fetch() to the vetted addresses (no redirects: a 3xx is answered as it is, never followed): the next address only
 * while no connection was ever established, all of them within `timeoutMs` (module comment).
 */
export async function fetchVetted(vetted: VettedUrl, init: VettedInit): Promise<Response> {
  return fetchVettedWith(vetted, init, tcpConnectProbe);
}

/**
 * Addresses (with their port) that gave an answer within ANSWERED_TTL_MS are fetched without the connect probe: the
 * probe costs a handshake per call and defeats keep-alive, and a webhook receiver or a facilitator behind a CDN has
 * several addresses and is called over and over. In the race such an address is taken without a probe when its turn
 * comes while no earlier address's probe is pending (it is first, or the ones before it failed): nothing else could
 * connect first. Its turn is still the guard's order (an earlier address that does not fail fast is raced as
 * before), so a remembered address never jumps an address that might answer. One that refuses is still passed over
 * (nothing was sent) and dropped from here; one that went silent since costs what is left of the deadline, as a
 * one-address name always has. Bounded: the oldest entry goes past ANSWERED_MAX.
 */
export const ANSWERED_TTL_MS = 60_000;
const ANSWERED_MAX = 1_024;
const answeredAt = new Map<string, number>();

function answeredRecently(key: string, now: number): boolean {
  const at = answeredAt.get(key);
  return at !== undefined && now - at < ANSWERED_TTL_MS;
}

function noteAnswered(key: string, now: number): void {
  answeredAt.delete(key); // re-inserted last: the map's order is the eviction order
  answeredAt.set(key, now);
  if (answeredAt.size > ANSWERED_MAX) answeredAt.delete(answeredAt.keys().next().value!);
}

/** `fetchVetted` with the connect probe given (tests give one that black-holes an address). */
export async function fetchVettedWith(vetted: VettedUrl, init: VettedInit, probe: ConnectProbe): Promise<Response> {
  const { timeoutMs, controller, headers: given, ...rest } = init;
  const endsAt = performance.now() + timeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = controller ? AbortSignal.any([controller.signal, timeout]) : timeout;
  const addresses = vetted.addresses.length > 0 ? vetted.addresses : [vetted.address];
  const keyOf = (address: string) => `${address}|${vetted.port}`;
  // the addresses not yet known to have nothing listening, in the guard's order
  let candidates: readonly string[] = addresses;
  for (;;) {
    if (signal.aborted) throw signal.reason;
    let address: string;
    if (candidates.length === 1) {
      // one address left (or a one-address name): nothing to race it against, fetched directly
      address = candidates[0]!;
    } else {
      // Bun's fetch has no connect deadline and cannot be raced without risking two sends: bare connects are raced,
      // and only the winner is fetched
      const now = Date.now();
      const trusted = (a: string) => answeredRecently(keyOf(a), now);
      const { winner, failed } = await raceConnects(candidates, vetted.port, probe, trusted, signal, endsAt);
      if (winner === undefined) {
        // every probe failed: the last address is fetched directly with what the deadline has left, as the
        // sequential attempts did, so every address failing ends as it did (its refusal, or the deadline), and a
        // connect that only the probe missed (a lost SYN) still gets its chance
        candidates = candidates.slice(-1);
        continue;
      }
      address = winner;
      candidates = candidates.filter((a) => !failed.has(a));
    }
    const key = keyOf(address);
    const { target, hostHeader, serverName } = vettedTarget(vetted, address);
    const headers = new Headers(given);
    headers.set("host", hostHeader);
    try {
      const res = await fetch(target, {
        ...rest,
        headers,
        redirect: "manual",
        signal,
        ...(serverName ? { tls: { serverName } } : {}),
      } as RequestInit);
      if (addresses.length > 1) noteAnswered(key, Date.now());
      return res;
    } catch (err) {
      answeredAt.delete(key);
      candidates = candidates.filter((a) => a !== address);
      // refused although it connected a moment ago (the server went away meanwhile): still nothing sent, another may
      // answer. Anything else may come after the request was read: the caller's, never sent elsewhere
      if (candidates.length > 0 && !signal.aborted && neverConnected(err)) continue;
      // Bun decodes the body while reading it, but a small body may already be decoded before fetch() resolves
      const code = decodeFailure(err);
      throw code ? new ResponseUndecodableError(code) : err;
    }
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
