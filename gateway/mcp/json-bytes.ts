/**
 * The body of a fast-path `tools/call` success, built as UTF-8 bytes from remembered per-item fragments.
 *
 * Why: a search answer is mostly the same products again, each rebuilt as a fresh object with the same content.
 * Serialising them as text every call (the data's JSON, then that JSON escaped again for the text block the MCP
 * specification recommends beside `structuredContent`, then the whole 18 kB message, then its UTF-8 copy in the
 * Response) allocated ~55 kB of strings per call; in the running gateway that, and the collections it caused, was
 * ~20 % of a search call's CPU samples. Here each list item's JSON and escaped JSON are kept as bytes, and the body
 * is one byte array assembled from them (in-process CPU per call -16 to -25 %, docs/performance.md "MCP").
 *
 * Exactness: the bytes are always the UTF-8 of `JSON.stringify({ jsonrpc: "2.0", id, result })` for the result
 * successResult makes (content = one text block holding `JSON.stringify(data)`, structuredContent = data). A
 * remembered item fragment `f` is reused for a new item `x` only when `x` matches `JSON.parse(f)` under
 * `matches`: the same own enumerable keys in the same order, primitives `===`, nested plain objects and arrays
 * compared the same way, nothing with a `toJSON`. Such an `x` serialises to `JSON.stringify(JSON.parse(f))`, which
 * is `f` for any output of JSON.stringify (canonical numbers and escapes, no whitespace). Anything unusual
 * (undefined or function values, Dates, class instances, NaN) never matches and is serialised by JSON.stringify.
 * Escaping is per character, so the escaped whole is the concatenation of the escaped pieces (pieces are cut at
 * JSON punctuation, never inside a surrogate pair). Unit-tested against JSON.stringify (test/mcp/json-bytes.test.ts).
 */

const encoder = new TextEncoder();

/** A piece of the body: its JSON and that JSON escaped as a JSON string's content, both UTF-8. */
interface Piece {
  json: Uint8Array;
  escaped: Uint8Array;
}

interface Remembered extends Piece {
  /** `JSON.parse` of the fragment, prepared for comparison; never handed out. */
  snapshot: Snapshot;
}

/** Product-sized items (~1 kB of JSON twice plus the snapshot): a few MB at most. */
const MAX_REMEMBERED = 4_096;
const remembered = new Map<string, Remembered>();

function escapeJsonText(json: string): string {
  const quoted = JSON.stringify(json);
  return quoted.slice(1, quoted.length - 1);
}

function piece(json: string): Piece {
  return { json: encoder.encode(json), escaped: encoder.encode(escapeJsonText(json)) };
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== "function";
}

/**
 * Plain data from JSON.parse, prepared for fast comparison: an object snapshot keeps its keys in order, its values,
 * and a comparison function compiled once per key list. Reads by constant property name are cached by the engine
 * per object shape; reads by a variable key in one generic function were not (in the running gateway the generic
 * version was ~11 % of a search call's samples).
 */
type Snapshot = string | number | boolean | null | SnapObject | SnapArray;
type Compare = (x: object, values: readonly Snapshot[], keys: readonly string[]) => boolean;
class SnapObject {
  constructor(
    readonly keys: string[],
    readonly values: Snapshot[],
    readonly compare: Compare,
  ) {}
}
class SnapArray {
  constructor(readonly items: Snapshot[]) {}
}

const comparers = new Map<string, Compare>();
const MAX_COMPARERS = 1_000;

/**
 * `(x, values, keys) => x's own enumerable keys are exactly keys, in order, and x[keys[i]] matches values[i]`.
 * for-in also lists inherited enumerable keys, which JSON.stringify leaves out: any such key is a mismatch.
 * Key names enter the generated code only through JSON.stringify (a string literal), never as code.
 */
function comparerFor(keys: readonly string[]): Compare {
  const signature = JSON.stringify(keys);
  let c = comparers.get(signature);
  if (!c) {
    const checks = keys.map((k, i) => `m(x[${JSON.stringify(k)}], v[${i}])`);
    const body =
      `let i = 0; for (const k in x) { if (k !== keys[i]) return false; i++; } if (i !== ${keys.length}) return false; ` +
      `return ${checks.length > 0 ? checks.join(" && ") : "true"};`;
    c = new Function("m", `return function compare(x, v, keys) { ${body} };`)(matches) as Compare;
    if (comparers.size < MAX_COMPARERS) comparers.set(signature, c);
  }
  return c;
}

function snapshotOf(parsed: unknown): Snapshot {
  if (typeof parsed !== "object" || parsed === null) return parsed as Snapshot;
  if (Array.isArray(parsed)) return new SnapArray(parsed.map(snapshotOf));
  const keys = Object.keys(parsed);
  return new SnapObject(
    keys,
    keys.map((k) => snapshotOf((parsed as Record<string, unknown>)[k])),
    comparerFor(keys),
  );
}

function matches(x: unknown, snap: Snapshot): boolean {
  if (typeof x !== "object" || x === null) return x === snap;
  if (snap instanceof SnapObject) return !Array.isArray(x) && isPlainObject(x) && snap.compare(x, snap.values, snap.keys);
  if (snap instanceof SnapArray) {
    if (!Array.isArray(x) || x.length !== snap.items.length || typeof (x as { toJSON?: unknown }).toJSON === "function") return false;
    for (let i = 0; i < x.length; i++) if (!matches(x[i], snap.items[i]!)) return false;
    return true;
  }
  return false;
}

/** True when `x` serialises exactly as `parsed` (plain data from JSON.parse) does. */
export function sameJsonData(x: unknown, parsed: unknown): boolean {
  return matches(x, snapshotOf(parsed));
}

/** One list item: its remembered fragment when the item is unchanged, else serialised (and remembered by id). */
function item(v: unknown): Piece {
  if (typeof v === "object" && v !== null && !Array.isArray(v)) {
    const id = (v as { id?: unknown }).id;
    if (typeof id === "string") {
      const hit = remembered.get(id);
      if (hit && matches(v, hit.snapshot)) return hit;
      const json = JSON.stringify(v);
      const r: Remembered = { ...piece(json), snapshot: snapshotOf(JSON.parse(json)) };
      if (remembered.size >= MAX_REMEMBERED) remembered.clear();
      remembered.set(id, r);
      return r;
    }
  }
  // JSON.stringify turns undefined, functions and symbols in an array into null
  return piece(JSON.stringify(v) ?? "null");
}

const constant = (s: string): Piece => piece(s);
const COMMA = constant(",");
const OPEN_ARRAY = constant("[");
const CLOSE_ARRAY = constant("]");
const OPEN_OBJECT = constant("{");
const CLOSE_OBJECT = constant("}");

/** `"key":` (or `,"key":`) as a piece, cached: result objects use a handful of keys. */
const keyPieces = new Map<string, Piece>();
function keyPiece(k: string, first: boolean): Piece {
  const cacheKey = first ? k : "," + k;
  let p = keyPieces.get(cacheKey);
  if (!p) {
    p = piece(`${first ? "" : ","}${JSON.stringify(k)}:`);
    if (keyPieces.size < 1_000) keyPieces.set(cacheKey, p);
  }
  return p;
}

/**
 * The pieces of `JSON.stringify(value)` for a plain object `value`, arrays directly under it (e.g. `products`)
 * item by item; false (nothing pushed) for anything else.
 */
function objectPieces(value: unknown, out: Piece[]): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value) || !isPlainObject(value)) return false;
  out.push(OPEN_OBJECT);
  let first = true;
  for (const k of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[k];
    if (Array.isArray(v) && typeof (v as { toJSON?: unknown }).toJSON !== "function") {
      out.push(keyPiece(k, first), OPEN_ARRAY);
      for (let i = 0; i < v.length; i++) {
        if (i > 0) out.push(COMMA);
        out.push(item(v[i]));
      }
      out.push(CLOSE_ARRAY);
    } else {
      const json = JSON.stringify(v);
      if (json === undefined) continue; // JSON.stringify leaves out undefined, function and symbol values
      out.push(keyPiece(k, first), piece(json));
    }
    first = false;
  }
  out.push(CLOSE_OBJECT);
  return true;
}

const HEAD = encoder.encode('{"jsonrpc":"2.0","id":');
const BEFORE_TEXT = encoder.encode(',"result":{"content":[{"type":"text","text":"');
const BEFORE_STRUCTURED = encoder.encode('"}],"structuredContent":');
const TAIL = encoder.encode("}}");

/**
 * UTF-8 of `JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: JSON.stringify(data) }],
 * structuredContent: data } })`, or undefined when `data` is not a plain object (the caller serialises as before).
 */
export function toolsCallSuccessBody(id: string | number | null, data: unknown): Uint8Array | undefined {
  const pieces: Piece[] = [];
  if (!objectPieces(data, pieces)) return undefined;
  const idBytes = encoder.encode(JSON.stringify(id));
  let n = HEAD.length + idBytes.length + BEFORE_TEXT.length + BEFORE_STRUCTURED.length + TAIL.length;
  for (const p of pieces) n += p.json.length + p.escaped.length;
  const body = new Uint8Array(n);
  let o = 0;
  body.set(HEAD, o);
  o += HEAD.length;
  body.set(idBytes, o);
  o += idBytes.length;
  body.set(BEFORE_TEXT, o);
  o += BEFORE_TEXT.length;
  for (const p of pieces) {
    body.set(p.escaped, o);
    o += p.escaped.length;
  }
  body.set(BEFORE_STRUCTURED, o);
  o += BEFORE_STRUCTURED.length;
  for (const p of pieces) {
    body.set(p.json, o);
    o += p.json.length;
  }
  body.set(TAIL, o);
  return body;
}

/** For tests: forget every remembered fragment. */
export function forgetRememberedItems(): void {
  remembered.clear();
}
