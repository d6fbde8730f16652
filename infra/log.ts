/**
 * Structured logs: one JSON object per line on stderr. Secrets never reach a log line: fields whose name looks
 * secret (key, password, token, secret, authorization) are replaced before serialisation, so a careless call
 * site cannot leak them (test/unit/log.test.ts captures the output to prove it).
 *
 * A line written in a request's scope (the gateway's edge hook enters it; an actor turn runs in the scope of the
 * request id its message carries) names that request: `requestId`, read only when a line is written.
 */
import { AsyncLocalStorage } from "node:async_hooks";

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
/** Field names whose values are secrets: redacted here, and never quoted back in a validation error (gateway). */
// `signature` and `^x[-_]payment` (audit M-9): an x402 payment's `signature` field, its PAYMENT-SIGNATURE header (the
// whole base64 payload: an EIP-3009 authorization and its signature, spendable by whoever holds it until validBefore)
// and the older X-PAYMENT header. Anchored, so `max_payment` is not one.
export const SECRET_FIELD = /(pass(word)?|secret|token|api[-_]?key|authorization|private[-_]?key|^key$|cookie|signature|^x[-_]payment)/i;

/**
 * Base64 (or base64url) of a JSON object ("eyJ" is `{"`) that holds a signature or an authorization, such as an x402
 * payment payload quoted in an error text; other base64 JSON (a search cursor, say) is left alone. Only strings that
 * already matched the pattern are decoded, so ordinary log lines pay for the regex alone.
 */
function redactSignedBase64Json(match: string): string {
  const text = Buffer.from(match, "base64").toString("latin1");
  return /"(signature|authorization)"/i.test(text) ? "[redacted-signed-payload]" : match;
}

/**
 * Secret-looking values inside free text: our key/secret/token prefixes, JWTs, bearer tokens, 32-byte hex keys and
 * longer hex (a 65-byte x402/EVM signature is 0x + 130 hex), base64 JSON holding a signature (x402 payloads).
 */
const SECRET_VALUES: readonly [RegExp, string | ((match: string) => string)][] = [
  // an agent key keeps its 12-character lookup prefix (not secret: docs/access.md), the only handle an operator has
  // to tie a line to a key row; anything shorter than a prefix plus one character is dropped whole
  [/\bagnt_([0-9A-Za-z]{12})[A-Za-z0-9_-]+/g, "agnt_$1…[redacted]"],
  [/\b(agnt_|whsec_|rt_|mcps_)(?![0-9A-Za-z]{12}…\[redacted\])[A-Za-z0-9_-]+/g, "$1[redacted]"],
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, "[redacted-jwt]"],
  [/(Bearer\s+)[A-Za-z0-9._~+/=-]+/gi, "$1[redacted]"],
  [/\b0x[0-9a-fA-F]{64,}\b/g, "0x[redacted]"],
  [/\beyJ[A-Za-z0-9+/_-]{40,}={0,2}/g, redactSignedBase64Json],
];

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

let level: LogLevel = (process.env.LOG_LEVEL as LogLevel) || "info";
let sink: (line: string) => void = (line) => process.stderr.write(line + "\n");

export function setLogLevel(l: LogLevel): void {
  level = l;
}

/** Whether a line at this level would be written (lets a hot path skip building the fields of a debug line). */
export function logEnabled(l: LogLevel): boolean {
  return ORDER[l] >= ORDER[level];
}

/** Tests capture log output through this. Returns a function restoring the previous sink. */
export function setLogSink(fn: (line: string) => void): () => void {
  const prev = sink;
  sink = fn;
  return () => {
    sink = prev;
  };
}

/** The request id of the code running now (undefined outside a request). */
const requestScope = new AsyncLocalStorage<string | undefined>();

/** The request id lines written now carry (and actor messages sent now: actors/runtime/client.ts). */
export function currentRequestId(): string | undefined {
  return requestScope.getStore();
}

/**
 * Enters a request's scope for the rest of the current synchronous run and what it awaits or schedules (the
 * gateway's edge hook, once per request: Bun starts each request of Bun.serve with no scope). `id` must already be
 * sane (gateway/plugins/request-id.ts).
 */
export function enterRequest(id: string): void {
  requestScope.enterWith(id);
}

/** Runs `fn` in the scope of request `id`, or of no request when `id` is undefined (a reminder turn). */
export function inRequest<R>(id: string | undefined, fn: () => R): R {
  return requestScope.run(id, fn);
}

export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return SECRET_VALUES.reduce((v, [re, to]) => (typeof to === "string" ? v.replace(re, to) : v.replace(re, to)), value);
  if (value instanceof Error) return { name: value.name, message: redact(value.message) };
  if (value === null || typeof value !== "object" || depth > 4) return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_FIELD.test(k) ? "[redacted]" : redact(v, depth + 1);
  return out;
}

function make(base: LogFields): Logger {
  const emit = (l: LogLevel, msg: string, fields?: LogFields) => {
    if (ORDER[l] < ORDER[level]) return;
    const requestId = requestScope.getStore();
    const own = requestId === undefined ? { ...base, ...fields } : { requestId, ...base, ...fields };
    const record = { level: l, time: new Date().toISOString(), msg: redact(msg), ...(redact(own) as LogFields) };
    sink(JSON.stringify(record));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (f) => make({ ...base, ...f }),
  };
}

export const log: Logger = make({});
