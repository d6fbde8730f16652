/**
 * Schema-driven fuzzing of the MCP tools (test/mcp/fuzz-tools.test.ts): fast-check arbitraries built from each
 * tool's advertised `inputSchema` (valid-looking arguments and mutated ones), a JSON encoder that can send what
 * `JSON.stringify` cannot (`-0`, `1e400`), and the oracle every answer is judged by: a result (success valid against
 * the tool's `outputSchema`, or a structured tool error of a documented code with the code table's remedy, retryable
 * and scope), or a JSON-RPC error of a protocol code; never an internal error, a leak of internals, or a hang.
 */
import Ajv, { type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { readFileSync } from "node:fs";
import { ERROR_TABLE, isErrorCode } from "../../actors/runtime/errors.ts";

/** The JSON Schema subset the tools' input schemas use (TypeBox output: checked by the fuzz test's first case). */
export interface JsonSchema {
  type?: "object" | "string" | "number" | "integer" | "boolean" | "array";
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  description?: string;
}

export const KNOWN_KEYWORDS = new Set([
  "type", "properties", "required", "additionalProperties", "items", "anyOf", "const", "minLength", "maxLength", "minimum",
  "maximum", "exclusiveMinimum", "minItems", "maxItems", "pattern", "format", "description",
]);

export interface ToolEntry {
  name: string;
  inputSchema: JsonSchema;
  outputSchema?: { anyOf?: [Record<string, unknown>, Record<string, unknown>] } & Record<string, unknown>;
}

// ------------------------------------------------------------------------------------------- raw JSON

/** A number written as its own JSON text: `-0`, `1e400` (JSON.parse makes it Infinity), `1.0`. */
export class RawNumber {
  constructor(readonly text: string) {}
}

/** JSON text of a value that may hold RawNumbers; everything else as JSON.stringify writes it. */
export function encodeJson(value: unknown): string {
  if (value instanceof RawNumber) return value.text;
  if (Array.isArray(value)) return `[${value.map(encodeJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value as Record<string, unknown>).map(([k, v]) => `${JSON.stringify(k)}:${encodeJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** A short, readable form of a case for a report (long strings cut, raw numbers as their text). */
export function preview(value: unknown, max = 300): string {
  const seen = encodeJson(value).replace(/(a{20})a+/g, "$1…").replace(/("[^"]{60})[^"]{20,}"/g, '$1…"');
  return seen.length > max ? `${seen.slice(0, max)}…(${seen.length} chars)` : seen;
}

// ------------------------------------------------------------------------------------------- arbitraries

/**
 * Values of the service's own to mix into valid-looking arguments, by argument name: a random UUID only ever reaches
 * the not-found branch, a real product, cart, session or order reaches the rest of the tool.
 */
export type Pools = Partial<Record<string, readonly unknown[]>>;

function stringArb(s: JsonSchema): fc.Arbitrary<string> {
  if (s.format === "uuid") return fc.uuid();
  if (s.pattern) return fc.stringMatching(new RegExp(s.pattern));
  const minLength = s.minLength ?? 0;
  const maxLength = Math.min(s.maxLength ?? 40, Math.max(minLength, 40));
  // free text within the schema's bounds: printable, any grapheme, any code unit (NUL, lone surrogates), and the
  // nasty strings, which the schema lets through to the handler, the database and the search index
  const nasty = NASTY_STRINGS.filter((x) => [...x].length >= minLength && [...x].length <= (s.maxLength ?? Infinity));
  return fc.oneof(
    fc.string({ minLength, maxLength }),
    fc.string({ minLength, maxLength, unit: "grapheme" }),
    fc.string({ minLength, maxLength, unit: "binary" }),
    ...(nasty.length > 0 ? [fc.constantFrom(...nasty)] : []),
  );
}

/** Numbers the schema allows that a handler may not expect: huge (1e308 is an integer too), tiny, past 2^53. */
function edgeNumbers(s: JsonSchema, integer: boolean): number[] {
  const xs = integer ? [2 ** 31, 2 ** 53, 2 ** 53 + 2, 1e21, 1e308] : [5e-324, 1e-12, 1e-7, 0.1 + 0.2, 1e12, 2 ** 53 + 2, 1e21, 1e308];
  return xs.filter((x) => (s.minimum === undefined || x >= s.minimum) && (s.exclusiveMinimum === undefined || x > s.exclusiveMinimum) && (s.maximum === undefined || x <= s.maximum));
}

function numberArb(s: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const plain = integer
    ? fc.integer({ min: s.minimum ?? -1000, max: s.maximum ?? Math.max(s.minimum ?? 0, 0) + 1000 })
    : s.exclusiveMinimum !== undefined
      ? fc.double({ min: s.exclusiveMinimum, minExcluded: true, max: s.maximum ?? 100_000, noNaN: true })
      : fc.double({ min: s.minimum ?? -100_000, max: s.maximum ?? 100_000, noNaN: true });
  const edge = edgeNumbers(s, integer);
  return edge.length > 0 ? fc.oneof({ weight: 4, arbitrary: plain }, { weight: 1, arbitrary: fc.constantFrom(...edge) }) : plain;
}

/**
 * Valid-looking values of one schema (within its bounds), with the pools' values for arguments of that name
 * (`onlyPools`: nothing but them where a pool exists, for the sweeps' base arguments).
 */
export function valueArb(s: JsonSchema, name: string, pools: Pools, onlyPools = false): fc.Arbitrary<unknown> {
  const pool = pools[name];
  if (onlyPools && pool && pool.length > 0) return fc.constantFrom(...pool);
  const own = valueOfSchema(s, name, pools, onlyPools);
  return pool && pool.length > 0 ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...pool) }, { weight: 1, arbitrary: own }) : own;
}

function valueOfSchema(s: JsonSchema, name: string, pools: Pools, onlyPools: boolean): fc.Arbitrary<unknown> {
  if ("const" in s) return fc.constant(s.const);
  if (s.anyOf) return fc.oneof(...s.anyOf.map((b) => valueArb(b, name, pools, onlyPools)));
  switch (s.type) {
    case "string":
      return stringArb(s);
    case "integer":
      return numberArb(s, true);
    case "number":
      return numberArb(s, false);
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(valueArb(s.items ?? {}, singular(name), pools, onlyPools), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 5, 5) });
    case "object":
      return objectArb(s, pools, onlyPools);
    default:
      return fc.jsonValue();
  }
}

/** `items` → `item`, `product_ids` → `product_id`: an array's items take the pool of the singular name. */
function singular(name: string): string {
  return name.endsWith("s") ? name.slice(0, -1) : name;
}

export function objectArb(s: JsonSchema, pools: Pools, onlyPools = false): fc.Arbitrary<Record<string, unknown>> {
  const props = s.properties ?? {};
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, v] of Object.entries(props)) model[k] = valueArb(v, k, pools, onlyPools);
  return fc.record(model, { requiredKeys: (s.required ?? []).filter((k) => k in props) }) as fc.Arbitrary<Record<string, unknown>>;
}

/** Strings that have broken services before: NUL, lone surrogates, bidi and BOM, combining marks, injection text. */
export const NASTY_STRINGS: readonly string[] = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\udc00\ud800",
  "\u202eevil",
  "\ufeff",
  "e\u0301\u0301\u0301",
  "😀".repeat(30),
  "𝕏",
  "' OR 1=1 --",
  "%00%ff",
  "../../../etc/passwd",
  "${jndi:ldap://x}",
  "<script>alert(1)</script>",
  "\\",
  "\"",
  "\r\n\t",
  "null",
  "NaN",
  "-0",
  "00000000-0000-0000-0000-000000000000",
  "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF",
  "cart_",
  "cart_\u0000",
  "cs_",
  "0x10",
  "1e400",
];

/** Numbers at and beyond the edges: huge, tiny, negative zero, fractions, beyond-double (JSON.parse → Infinity). */
export const NASTY_NUMBERS: readonly unknown[] = [
  0,
  -1,
  0.5,
  1.0000001,
  10000.5,
  1e308,
  -1e308,
  5e-324,
  2 ** 53 + 2,
  -(2 ** 53) - 2,
  1e21,
  new RawNumber("-0"),
  new RawNumber("1e400"),
  new RawNumber("-1e400"),
  new RawNumber("1.0"),
  new RawNumber("100000000000000000000000000000000000001"),
];

const OTHER_TYPES: readonly unknown[] = [null, true, false, 0, 1.5, "", "x", [], [1, "a"], {}, { a: 1 }, [[[]]]];

/** Nested `{a: {a: …}}` or `[[…]]`, `depth` levels deep. */
export function nested(depth: number, kind: "object" | "array"): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = kind === "object" ? { a: v } : [v];
  return v;
}

export interface FuzzCase {
  /** What was done to the arguments: `valid`, or the mutation's name and where. */
  label: string;
  args: Record<string, unknown>;
}

type Path = (string | number)[];

/** Every path to a value inside the arguments (the arguments object itself excluded). */
function pathsOf(v: unknown, at: Path = []): Path[] {
  const out: Path[] = [];
  if (Array.isArray(v)) v.forEach((x, i) => out.push([...at, i], ...pathsOf(x, [...at, i])));
  else if (v !== null && typeof v === "object" && !(v instanceof RawNumber)) {
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out.push([...at, k], ...pathsOf(x, [...at, k]));
  }
  return out;
}

function setAt(root: Record<string, unknown>, path: Path, value: unknown | typeof REMOVE): Record<string, unknown> {
  const copy = structuredClone(root);
  let node: Record<string | number, unknown> = copy;
  for (const p of path.slice(0, -1)) node = node[p] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value === REMOVE) {
    if (Array.isArray(node)) node.splice(last as number, 1);
    else delete node[last];
  } else node[last] = value;
  return copy;
}

const REMOVE = Symbol("remove");

/** The schema at a path of arguments of `s` (undefined past what the schema says). */
function schemaAt(s: JsonSchema, path: Path): JsonSchema | undefined {
  let cur: JsonSchema | undefined = s;
  for (const p of path) {
    if (!cur) return undefined;
    if (cur.anyOf) cur = cur.anyOf.find((b) => b.type === "object" || b.type === "array") ?? cur.anyOf[0];
    cur = typeof p === "number" ? cur?.items : cur?.properties?.[p];
  }
  return cur;
}

/**
 * One mutation of valid-looking arguments: a wrong type, null, an edge number, a long or nasty string, deep nesting,
 * an unknown or prototype-named property, a missing required one, an array for an object (and back), an unknown id.
 */
export function mutationArb(s: JsonSchema, valid: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<FuzzCase> {
  return fc.tuple(valid, fc.nat(), fc.nat(), fc.integer({ min: 0, max: 10 })).map(([args, i, j, kind]) => {
    const paths = pathsOf(args);
    const path = paths.length > 0 ? paths[i % paths.length]! : undefined;
    const where = path ? path.join(".") : "(arguments)";
    const pick = <T>(xs: readonly T[]): T => xs[j % xs.length]!;
    const at = (v: unknown, label: string): FuzzCase => (path ? { label: `${label} at ${where}`, args: setAt(args, path, v) } : { label: `${label} (as unknown property)`, args: { ...args, zz: v } });
    switch (kind) {
      case 0: {
        const required = s.required ?? [];
        if (required.length === 0) return at(pick(OTHER_TYPES), "wrong type");
        const k = pick(required);
        const { [k]: _gone, ...rest } = args;
        return { label: `missing required ${k}`, args: rest };
      }
      case 1:
        return at(pick(OTHER_TYPES), "wrong type");
      case 2:
        return at(null, "null");
      case 3:
        return at(pick(NASTY_NUMBERS), "edge number");
      case 4: {
        // at most 150,000 characters: even written as "\ud800" escapes (6 bytes each) the message stays under the 1 MiB
        // body limit, whose 413 the protocol test covers on its own
        const n = pick([501, 4_001, 65_536, 150_000]);
        return at(pick(["a", "é", "😀", "\u0000", "\ud800"]).repeat(n), `long string (${n})`);
      }
      case 5:
        return at(pick(NASTY_STRINGS), "nasty string");
      case 6: {
        const depth = pick([8, 30, 58, 61, 70, 300]);
        return at(nested(depth, pick(["object", "array"] as const)), `nested ${depth}`);
      }
      case 7: {
        const k = pick(["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "", " query", "x".repeat(300), "\u0000", "items[0]"]);
        const out = structuredClone(args);
        Object.defineProperty(out, k, { value: pick(OTHER_TYPES), enumerable: true, configurable: true, writable: true });
        return { label: `unknown property ${JSON.stringify(k.slice(0, 20))}`, args: out };
      }
      case 8: {
        const sub = path ? schemaAt(s, path) : undefined;
        if (sub?.type === "array") return at({ 0: (args as Record<string, unknown>)[String(path![0])] }, "object for array");
        if (sub?.type === "object") return at([1, 2, 3], "array for object");
        return at(pick([[pick(NASTY_STRINGS)], { value: 1 }]), "container for scalar");
      }
      case 9: {
        const sub = path ? schemaAt(s, path) : undefined;
        if (sub?.format === "uuid") return at(crypto.randomUUID(), "unknown id");
        return at(pick(["cart_" + "0".repeat(8), "cs_does_not_exist", "00000000-0000-4000-8000-000000000000", "cart_00000000-0000-4000-8000-000000000000"]), "unknown id");
      }
      default: {
        // removing an array item, which can leave an empty array under minItems
        return path ? { label: `removed ${where}`, args: setAt(args, path, REMOVE) } : { label: "empty arguments", args: {} };
      }
    }
  });
}

/**
 * Coherent arguments of a tool, by its name, that the test built through the tools before the run: ids of resources
 * in the state the tool needs (an open cart only this tool edits, a previewed session only this tool pays or cancels,
 * a pending order, a provisioned wallet) with the other arguments agreeing with them (the cart's own product, the
 * store's coupon, a bid its rules accept). Sent as they are (label `seeded`) and mutated, beside generated ones, so the
 * tool's success path and its outputSchema are exercised.
 */
export type Seeds = Partial<Record<string, readonly Record<string, unknown>[]>>;

/**
 * `count` cases for one tool, deterministic for `seed`: `valid` valid-looking ones (half of them the tool's seeds,
 * when it has any), the rest mutated (from either).
 */
/**
 * A bug hunt's knob: FUZZ_SCALE multiplies every tool's generated cases (valid and mutated; the sweep is fixed), so a
 * new seed can be run with more calls than CI's; unset or not a positive number, the committed counts.
 */
const SCALE = Number(process.env.FUZZ_SCALE) > 0 ? Number(process.env.FUZZ_SCALE) : 1;

export function casesFor(tool: ToolEntry, pools: Pools, seed: number, valid: number, mutated: number, seeds: Seeds = {}): FuzzCase[] {
  valid = Math.round(valid * SCALE);
  mutated = Math.round(mutated * SCALE);
  const own = seeds[tool.name] ?? [];
  const generated = objectArb(tool.inputSchema, pools);
  const arb = own.length > 0 ? fc.oneof(generated, fc.constantFrom(...own)) : generated;
  const ok = fc.sample(arb, { seed, numRuns: valid }).map((args) => ({ label: own.includes(args) ? "seeded" : "valid", args: own.includes(args) ? structuredClone(args) : args }));
  const bad = mutated > 0 ? fc.sample(mutationArb(tool.inputSchema, arb), { seed: seed + 1, numRuns: mutated }) : [];
  return [...ok, ...bad];
}

/**
 * The boundary sweep: arguments made of the service's own values (so every check up to the one under test passes),
 * then each top-level number set to each edge the schema allows, and each free-text string (no format or pattern) to
 * each nasty string within its bounds. Random cases rarely put an edge value next to a real product and the right
 * currency; this does it for every argument.
 */
export function sweepFor(tool: ToolEntry, pools: Pools, seed: number): FuzzCase[] {
  const [base] = fc.sample(objectArb({ ...tool.inputSchema, required: Object.keys(tool.inputSchema.properties ?? {}) }, pools, true), { seed, numRuns: 1 });
  if (!base) return [];
  const out: FuzzCase[] = [];
  for (const [k, s] of Object.entries(tool.inputSchema.properties ?? {})) {
    if (s.type === "number" || s.type === "integer") for (const x of edgeNumbers(s, s.type === "integer")) out.push({ label: `edge ${k}`, args: { ...base, [k]: x } });
    if (s.type === "string" && !s.format && !s.pattern && pools[k] === undefined) {
      for (const x of NASTY_STRINGS) if ([...x].length >= (s.minLength ?? 0) && [...x].length <= (s.maxLength ?? Infinity)) out.push({ label: `nasty ${k}`, args: { ...base, [k]: x } });
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------- oracle

/** Codes documented in docs/mcp-tools.md's error table, plus the access codes it names in words. */
export function documentedToolCodes(): Set<string> {
  const text = readFileSync(new URL("../../docs/mcp-tools.md", import.meta.url), "utf8");
  const codes = new Set([...text.matchAll(/^\| \[`([A-Z_]+)`\]/gm)].map((m) => m[1]!));
  for (const c of ["forbidden", "sandbox_not_allowed", "feature_not_in_tier"]) codes.add(c);
  return codes;
}

/** JSON-RPC error codes a protocol-level problem may get (JSON-RPC 2.0 and the SDK's/this server's own). */
export const PROTOCOL_CODES = new Set([-32700, -32600, -32601, -32602, -32000, -32001, -32003, -32029]);

/** Stack frames, file paths and the words of exceptions or the database that must never reach a caller. */
const LEAKS: readonly [string, RegExp][] = [
  ["stack frame", /\n\s+at\s+\S+/],
  ["file path", /(?:\/(?:work|home|root|usr|tmp|opt|var)\/[\w.-]+\/)|(?:\b[\w.-]+\.(?:ts|js|mjs)(?::\d+){1,2})/],
  ["node_modules", /node_modules/],
  ["exception name", /\b(?:TypeError|ReferenceError|RangeError|SyntaxError|PostgresError|AggregateError)\b/],
  ["exception text", /undefined is not|Cannot read propert|is not a function|Maximum call stack/],
  ["database text", /invalid byte sequence|violates (?:not-null|check|unique|foreign)|syntax error at or near|relation "|column "|invalid input syntax/],
];

export function leakIn(text: string): string | undefined {
  for (const [what, re] of LEAKS) if (re.test(text)) return what;
  return undefined;
}

/** The most an error result may weigh (its message, details and the caller's values echoed cut to 100 characters). */
export const MAX_ERROR_ANSWER_CHARS = 8 * 1024;

export interface Violation {
  /** A stable kind: what went wrong, without the arguments (the known-list matches on it). */
  kind: string;
  endpoint: string;
  tool: string;
  label: string;
  args: string;
  answer: string;
}

export class Oracle {
  readonly ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
  private readonly input = new Map<string, ValidateFunction>();
  private readonly success = new Map<string, ValidateFunction>();
  private readonly error: ValidateFunction;
  readonly codes = documentedToolCodes();

  constructor(
    readonly siteUrl: string,
    tools: readonly ToolEntry[],
  ) {
    addFormats(this.ajv);
    let errorBranch: Record<string, unknown> | undefined;
    for (const t of tools) {
      if (this.input.has(t.name)) continue;
      this.input.set(t.name, this.ajv.compile(t.inputSchema));
      const branches = t.outputSchema?.anyOf;
      if (branches) {
        this.success.set(t.name, this.ajv.compile(branches[0]));
        errorBranch ??= branches[1];
      }
    }
    this.error = this.ajv.compile(errorBranch ?? { type: "object" });
  }

  /** Whether the advertised input schema accepts the arguments (as sent: RawNumbers as what JSON.parse makes of them). */
  inputValid(tool: string, args: unknown): boolean {
    const v = this.input.get(tool);
    return v ? v(JSON.parse(encodeJson(args))) : false;
  }

  /**
   * What is wrong with the JSON-RPC answer to a `tools/call` of a served tool with an arguments object (empty if
   * nothing). `schemaInvalid`: the advertised input schema refuses the arguments, so only an argument error will do.
   */
  judgeToolAnswer(tool: string, body: unknown, schemaInvalid: boolean): string[] {
    const out: string[] = [];
    if (body === null || typeof body !== "object") return ["answer is not a JSON-RPC object"];
    const m = body as { jsonrpc?: unknown; result?: Record<string, unknown>; error?: { code?: unknown; message?: unknown; data?: unknown } };
    if (m.jsonrpc !== "2.0") return ["answer is not JSON-RPC 2.0"];
    if (m.error) {
      const code = m.error.code;
      if (code === -32603) out.push("JSON-RPC internal error -32603");
      // a tools/call with an arguments object gets a result; only the message-wide bounds (-32600) come first
      else if (code !== -32600) out.push(`JSON-RPC error ${String(code)} for a well-formed tools/call`);
      else if ((m.error.data as { code?: unknown } | undefined)?.code !== "validation_error") out.push("-32600 without data.code validation_error");
      return out;
    }
    const r = m.result;
    if (!r || typeof r !== "object") return [...out, "neither result nor error"];
    if (!Array.isArray(r.content) || r.content.some((c: { type?: unknown; text?: unknown }) => c?.type !== "text" || typeof c.text !== "string")) out.push("content is not text blocks");
    const sc = r.structuredContent as Record<string, unknown> | undefined;
    if (!sc || typeof sc !== "object") return [...out, "no structuredContent"];
    const text = Array.isArray(r.content) ? (r.content as { text?: unknown }[]).map((c) => String(c?.text ?? "")).join("") : "";
    if (r.isError === true) {
      const e = sc.error as { code?: string; remedy?: string; retryable?: boolean; scope?: string; reference?: string } | undefined;
      if (!text.startsWith(`${e?.code}: `)) out.push("error text does not start with its code");
      // a caller's value is echoed at most ECHO_MAX_CHARS: an error answer stays small whatever was sent
      if (JSON.stringify(r).length > MAX_ERROR_ANSWER_CHARS) out.push(`error answer over ${MAX_ERROR_ANSWER_CHARS} characters`);
      if (!this.error(sc)) out.push(`error does not match the ToolError schema: ${this.ajv.errorsText(this.error.errors)}`);
      const code = e?.code ?? "";
      if (code === "INTERNAL_ERROR") out.push("INTERNAL_ERROR");
      else if (!isErrorCode(code)) out.push(`code ${code} is not in the code table`);
      else {
        if (!this.codes.has(code)) out.push(`code ${code} is not in docs/mcp-tools.md's error table`);
        const spec = ERROR_TABLE[code];
        if (e!.remedy !== spec.remedy || e!.retryable !== spec.retryable || e!.scope !== spec.scope) out.push(`${code}: remedy/retryable/scope differ from the code table`);
        if (e!.reference !== `${this.siteUrl}/docs/errors#${code}`) out.push(`${code}: reference is not {site_url}/docs/errors#CODE`);
        if (schemaInvalid && code !== "INVALID_ARGUMENT" && code !== "MISSING_REQUIRED_ARGUMENT") out.push(`schema-invalid arguments answered ${code}`);
      }
    } else {
      if (schemaInvalid) out.push("schema-invalid arguments answered success");
      if (text !== JSON.stringify(sc)) out.push("success text is not the JSON of structuredContent");
      const v = this.success.get(tool);
      if (v && !v(sc)) out.push(`success does not match outputSchema: ${this.ajv.errorsText(v.errors).slice(0, 200)}`);
    }
    return out;
  }
}

// ------------------------------------------------------------------------------------------- transport

export interface RawAnswer {
  status: number;
  text: string;
  body: unknown;
  ms: number;
  timedOut: boolean;
}

/** One POST of raw JSON text, cut off after `timeoutMs` (a hang is reported, not waited for). */
export async function post(url: string, text: string, headers: Record<string, string>, timeoutMs: number): Promise<RawAnswer> {
  const started = performance.now();
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: text,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const out = await res.text();
    let body: unknown = out;
    try {
      body = JSON.parse(out);
    } catch {
      /* not JSON: judged as such */
    }
    return { status: res.status, text: out, body, ms: performance.now() - started, timedOut: false };
  } catch (err) {
    if ((err as Error).name === "TimeoutError" || (err as Error).name === "AbortError") return { status: 0, text: "", body: undefined, ms: performance.now() - started, timedOut: true };
    throw err;
  }
}

/** Runs `work` over `items` with at most `width` at once, in order of the items. */
export async function pool<T, R>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!, i);
    }
  });
  await Promise.all(lanes);
  return out;
}
