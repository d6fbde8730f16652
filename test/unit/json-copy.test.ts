import { describe, expect, test } from "bun:test";
import { jsonCopy } from "../../actors/transport/json-copy.ts";

/** What the NATS wire (and the in-process bus before it) makes of a value. */
const viaJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

function outcome(f: () => unknown): { value?: unknown; error?: string } {
  try {
    return { value: f() };
  } catch (err) {
    return { error: (err as Error).constructor.name };
  }
}

class Point {
  x = 1;
  y = 2;
  get norm(): number {
    return 3;
  }
}

const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;

const CASES: [string, unknown][] = [
  ["an actor request envelope", { msgId: "m1", kind: "agent", id: "abc", type: "authorize", body: { hash: "ab", checkRoute: false, limits: { surface: "rest-agent", ip: "127.0.0.1" } }, deadline: 1, attempt: 1 }],
  ["a reply with nested arrays and nulls", { ok: true, value: { scopes: ["search"], rate: { limit: 10, remaining: 9, reset: 5 }, otherBuckets: [], denied: null } }],
  ["undefined, functions and symbols inside an object", { a: undefined, b: () => 1, c: Symbol("s"), d: 1 }],
  ["undefined, functions, symbols and holes inside an array", [1, undefined, () => 1, Symbol("s"), , 2]],
  ["non-finite numbers and negative zero", { nan: NaN, inf: Infinity, ninf: -Infinity, nz: -0, list: [NaN, -0] }],
  ["Dates, including an invalid one", { at: new Date(0), list: [new Date(1)], bad: new Date(NaN) }],
  ["an object with its own toJSON, which gets its key", { f: { toJSON: (k: string) => `key=${k}` }, list: [{ toJSON: (k: string) => `index=${k}` }] }],
  ["a Map, a Set and a typed array", { m: new Map([[1, 2]]), s: new Set([1]), u: new Uint8Array([1, 2]) }],
  ["a class instance (own enumerable fields only)", new Point()],
  ["an object with inherited enumerable keys (JSON copies own keys only)", Object.assign(Object.create({ inherited: 1 }) as object, { own: 2 })],
  ["an object without a prototype", Object.assign(Object.create(null) as object, { x: 1 })],
  ["boxed primitives", { n: new Number(3), s: new String("x"), b: new Boolean(false) }],
  ["integer-like keys (JSON's key order)", { b: 1, 2: "two", a: 2, 1: "one" }],
  ["a __proto__ own property", JSON.parse('{"__proto__": {"polluted": true}, "x": 1}')],
  ["strings with quotes, NUL and lone surrogates", { s: 'a "b" \u0000 \ud800 ✓' }],
  ["a bigint (JSON refuses it)", { n: 1n }],
  ["a cyclic value (JSON refuses it)", cyclic],
  ["a top-level function (JSON has no text for it)", () => 1],
  ["a function with a toJSON (JSON serialises it through toJSON)", { a: Object.assign(() => 1, { toJSON: () => "x" }), list: [Object.assign(() => 2, { toJSON: () => 2 })] }],
  ["null and plain primitives", null],
];

describe("copying an envelope with JSON's semantics", () => {
  for (const [name, value] of CASES) {
    test(`${name} comes out exactly as through JSON`, () => {
      const expected = outcome(() => viaJson(value));
      const actual = outcome(() => jsonCopy(value));
      expect(actual.error).toBe(expected.error);
      if (expected.error) return;
      expect(actual.value).toStrictEqual(expected.value);
      expect(JSON.stringify(actual.value)).toBe(JSON.stringify(expected.value));
    });
  }

  test("undefined stays undefined (an actor handler that returns nothing)", () => {
    expect(jsonCopy(undefined)).toBeUndefined();
  });

  test("the copy shares no object with the original", () => {
    const original = { list: [{ n: 1 }], nested: { deep: { x: [1, 2] } } };
    const copy = jsonCopy(original);
    copy.list[0]!.n = 2;
    copy.nested.deep.x.push(3);
    expect(original).toEqual({ list: [{ n: 1 }], nested: { deep: { x: [1, 2] } } });
  });

  test("a __proto__ key becomes an own property, never the copy's prototype", () => {
    const copy = jsonCopy(JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("a value nested deeper than the walk goes is still copied exactly", () => {
    let deep: unknown = { leaf: true };
    for (let i = 0; i < 500; i++) deep = { next: deep };
    expect(jsonCopy(deep)).toStrictEqual(viaJson(deep));
  });
});
