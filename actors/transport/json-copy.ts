/**
 * `jsonCopy(v)`: the value `JSON.parse(JSON.stringify(v))` gives, without building the text in between.
 *
 * The in-process bus copies every request and reply envelope (an actor never shares a mutable object with its
 * caller, and only what survives the NATS wire may cross). The JSON round trip was the largest single cost of one
 * actor message on the admission path (docs/performance.md "Admission"): it builds a string and scans it again.
 * This walks the value once and applies JSON's rules on the way: `toJSON` is called (a Date becomes its ISO
 * string), undefined/function/symbol properties are dropped and are null inside arrays, NaN/±Infinity become
 * null, -0 becomes 0, only own enumerable string keys are copied, and every copy is a plain object or array.
 * The rare cases it does not reproduce itself — boxed primitives, a bigint, a `__proto__` key, a cyclic or very
 * deep value, a top-level value JSON cannot represent — fall back to the real round trip for the whole value, so
 * the result (or the error thrown) is always exactly JSON's.
 */

/** Deeper than any envelope we send; past it the JSON round trip decides (and reports a cycle as JSON does). */
const MAX_DEPTH = 100;

/** Thrown inside the walk to hand the whole value to the JSON round trip. */
const NOT_PLAIN: unique symbol = Symbol("not plain JSON data");

/** What a property is when JSON leaves it out (an object member) or writes null (an array element). */
const SKIP: unique symbol = Symbol("skipped by JSON");

export function jsonCopy<T>(v: T): T {
  if (v === undefined) return v;
  try {
    const out = copyValue(v, "", 0);
    if (out !== SKIP) return out as T;
  } catch (err) {
    if (err !== NOT_PLAIN) throw err;
  }
  return JSON.parse(JSON.stringify(v)) as T;
}

/**
 * `JSON.parse(JSON.stringify({ [key]: v }))[key]`: the copy of one member of an object being copied (undefined
 * when JSON leaves the member out), for callers that copy a known envelope's fields themselves.
 */
export function jsonCopyMember(v: unknown, key: string): unknown {
  try {
    const out = copyValue(v, key, 1);
    return out === SKIP ? undefined : out;
  } catch (err) {
    if (err !== NOT_PLAIN) throw err;
  }
  return (JSON.parse(JSON.stringify({ [key]: v })) as Record<string, unknown>)[key];
}

/** `key` is the property name or array index JSON would pass to `toJSON`. */
function copyValue(v: unknown, key: string | number, depth: number): unknown {
  if (typeof v === "object" && v !== null && typeof (v as { toJSON?: unknown }).toJSON === "function") {
    v = (v as { toJSON(key: string): unknown }).toJSON(String(key));
  }
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      if (!Number.isFinite(v)) return null;
      return v === 0 ? 0 : v;
    case "object":
      if (v === null) return null;
      if (depth >= MAX_DEPTH) throw NOT_PLAIN;
      if (Array.isArray(v)) return copyArray(v, depth + 1);
      if (v instanceof Number || v instanceof String || v instanceof Boolean || v instanceof BigInt) throw NOT_PLAIN;
      return copyObject(v as Record<string, unknown>, depth + 1);
    case "bigint":
      throw NOT_PLAIN;
    default:
      // a function with a toJSON is serialised through it by JSON (functions are objects there): rare, so JSON does it
      if (typeof v === "function" && typeof (v as { toJSON?: unknown }).toJSON === "function") throw NOT_PLAIN;
      // undefined, function, symbol
      return SKIP;
  }
}

function copyArray(a: readonly unknown[], depth: number): unknown[] {
  const n = a.length;
  const out = new Array<unknown>(n);
  for (let i = 0; i < n; i++) {
    const x = copyValue(a[i], i, depth);
    out[i] = x === SKIP ? null : x;
  }
  return out;
}

function copyObject(o: Record<string, unknown>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // for-in visits own keys first, in Object.keys (and JSON.stringify) order, and is cheaper than allocating the
  // key array; inherited enumerable keys are skipped as JSON skips them
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    const x = copyValue(o[k], k, depth);
    if (x === SKIP) continue;
    // assigning "__proto__" would set the copy's prototype instead of creating an own property
    if (k === "__proto__") throw NOT_PLAIN;
    out[k] = x;
  }
  return out;
}
