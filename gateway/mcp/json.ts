/**
 * JSON of tool results (and of the REST search body), with the serialisation of list items remembered between
 * calls. A search answers mostly the same products again and again, each rebuilt as a fresh object with the same
 * content; their JSON (and, for MCP, the same JSON escaped once more for the text block the specification
 * recommends beside `structuredContent`) was computed anew on every call: about a sixth of a search call's CPU.
 *
 * Exactness: the output is always exactly `JSON.stringify(value)` (and the escaped form exactly
 * `JSON.stringify(JSON.stringify(value))` without its outer quotes). A remembered item fragment `f` is reused for a
 * new item `x` only when `x` matches `JSON.parse(f)` under `sameJsonData`: the same own enumerable keys in the same
 * order, primitives `===`, nested plain objects and arrays compared the same way, nothing with a `toJSON`. Such an
 * `x` serialises to `JSON.stringify(JSON.parse(f))`, which is `f` for any output of JSON.stringify (canonical
 * numbers and escapes, no whitespace). Anything unusual (undefined or function values, Dates, class instances,
 * NaN) never matches, so it is serialised by JSON.stringify as before. Unit-tested against JSON.stringify.
 */

/** JSON text and that text escaped as the content of a JSON string (no surrounding quotes). */
export interface SerialisedJson {
  json: string;
  /** `JSON.stringify(json)` without its first and last character. */
  escaped: string;
}

interface Remembered {
  /** `JSON.parse(json)`, prepared for comparison; never handed out. */
  snapshot: Snapshot;
  json: string;
  escaped: string;
}

/** Product-sized items (~1 kB of JSON, twice, plus the snapshot): a few MB at most. */
const MAX_REMEMBERED = 5_000;
const remembered = new Map<string, Remembered>();

function escapeJsonText(json: string): string {
  const quoted = JSON.stringify(json);
  return quoted.slice(1, quoted.length - 1);
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== "function";
}

/**
 * Plain data from JSON.parse, prepared for fast comparison: an object's keys in order beside its values, so a
 * comparison walks the new object once (for-in) without building key arrays.
 */
type Snapshot = string | number | boolean | null | SnapObject | SnapArray;
class SnapObject {
  constructor(
    readonly keys: string[],
    readonly values: Snapshot[],
  ) {}
}
class SnapArray {
  constructor(readonly items: Snapshot[]) {}
}

function snapshotOf(parsed: unknown): Snapshot {
  if (typeof parsed !== "object" || parsed === null) return parsed as Snapshot;
  if (Array.isArray(parsed)) return new SnapArray(parsed.map(snapshotOf));
  const keys = Object.keys(parsed);
  return new SnapObject(
    keys,
    keys.map((k) => snapshotOf((parsed as Record<string, unknown>)[k])),
  );
}

function matches(x: unknown, snap: Snapshot): boolean {
  if (typeof x !== "object" || x === null) return x === snap;
  if (snap instanceof SnapObject) {
    if (Array.isArray(x) || !isPlainObject(x)) return false;
    const keys = snap.keys;
    let i = 0;
    // for-in also lists inherited enumerable keys; JSON.stringify does not: any such key is a mismatch
    for (const k in x) {
      if (i >= keys.length || k !== keys[i] || !matches((x as Record<string, unknown>)[k], snap.values[i]!)) return false;
      i++;
    }
    return i === keys.length;
  }
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

/** One list item: its remembered fragment when the item is unchanged, else serialised and remembered. */
function item(v: unknown, memo: boolean): SerialisedJson {
  if (memo && typeof v === "object" && v !== null && !Array.isArray(v)) {
    const id = (v as { id?: unknown }).id;
    if (typeof id === "string") {
      const hit = remembered.get(id);
      if (hit && matches(v, hit.snapshot)) return hit;
      const json = JSON.stringify(v);
      const r: Remembered = { snapshot: snapshotOf(JSON.parse(json)), json, escaped: escapeJsonText(json) };
      if (remembered.size >= MAX_REMEMBERED) remembered.clear();
      remembered.set(id, r);
      return r;
    }
  }
  // JSON.stringify turns undefined, functions and symbols in an array into null
  const json = JSON.stringify(v) ?? "null";
  return { json, escaped: escapeJsonText(json) };
}

const keyCache = new Map<string, SerialisedJson>();
function key(k: string): SerialisedJson {
  let c = keyCache.get(k);
  if (!c) {
    const json = JSON.stringify(k) + ":";
    c = { json, escaped: escapeJsonText(json) };
    if (keyCache.size < 1000) keyCache.set(k, c);
  }
  return c;
}

/**
 * `JSON.stringify(value)` and its escaped form. Arrays directly under a plain object `value` (e.g. `products`)
 * have their object items remembered by `id`; everything else is serialised as JSON.stringify does.
 */
export function serialiseJson(value: unknown): SerialisedJson {
  if (typeof value !== "object" || value === null || Array.isArray(value) || !isPlainObject(value)) {
    const json = JSON.stringify(value);
    return { json, escaped: json === undefined ? (undefined as unknown as string) : escapeJsonText(json) };
  }
  let json = "{";
  let escaped = "{";
  let first = true;
  for (const k of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[k];
    let part: SerialisedJson;
    if (Array.isArray(v) && typeof (v as { toJSON?: unknown }).toJSON !== "function") {
      let aj = "[";
      let ae = "[";
      for (let i = 0; i < v.length; i++) {
        const p = item(v[i], true);
        if (i > 0) {
          aj += ",";
          ae += ",";
        }
        aj += p.json;
        ae += p.escaped;
      }
      part = { json: aj + "]", escaped: ae + "]" };
    } else {
      const j = JSON.stringify(v);
      if (j === undefined) continue; // JSON.stringify leaves out undefined, function and symbol values
      part = { json: j, escaped: escapeJsonText(j) };
    }
    const kk = key(k);
    if (!first) {
      json += ",";
      escaped += ",";
    }
    first = false;
    json += kk.json + part.json;
    escaped += kk.escaped + part.escaped;
  }
  return { json: json + "}", escaped: escaped + "}" };
}

/** For tests: forget every remembered fragment. */
export function forgetSerialisedItems(): void {
  remembered.clear();
}
