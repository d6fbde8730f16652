import { describe, expect, test } from "bun:test";
import { jsonCopy } from "../../actors/transport/json-copy.ts";
import { copyEnvelope } from "../../actors/transport/in-process.ts";
import type { RequestEnvelope } from "../../actors/runtime/envelope.ts";

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

describe("copying a request envelope field by field (the in-process bus)", () => {
  const envelope = (body: unknown, over: Record<string, unknown> = {}) =>
    ({ msgId: "m1", kind: "agent", id: "abc", type: "authorize", body, deadline: 1_700_000_000_000, attempt: 1, ...over }) as unknown as RequestEnvelope;
  /** What the host can see of an envelope: its seven fields (a key JSON leaves out reads as undefined). */
  const fields = (e: unknown) => {
    const r = e as Record<string, unknown>;
    return { msgId: r.msgId, kind: r.kind, id: r.id, type: r.type, body: r.body, deadline: r.deadline, attempt: r.attempt };
  };
  const cases: [string, RequestEnvelope][] = [
    ...CASES.map(([name, value]): [string, RequestEnvelope] => [`a body that is ${name}`, envelope(value)]),
    ["a body left out", envelope(undefined)],
    ["a function as the body", envelope(() => 1)],
    ["a NaN deadline", envelope({}, { deadline: NaN })],
    ["an infinite deadline and a -0 attempt", envelope({}, { deadline: Infinity, attempt: -0 })],
    ["a -0 attempt", envelope({}, { attempt: -0 })],
    ["a msgId that is a number", envelope({}, { msgId: 7 })],
    ["a missing type", envelope({}, { type: undefined })],
    ["a Date as the deadline", envelope({}, { deadline: new Date(5) })],
  ];
  for (const [name, env] of cases) {
    test(`${name}: the host sees exactly what JSON gives`, () => {
      const expected = outcome(() => fields(viaJson(env)));
      const actual = outcome(() => fields(copyEnvelope(env)));
      expect(actual.error).toBe(expected.error);
      if (expected.error) return;
      expect(actual.value).toStrictEqual(expected.value);
      expect(Object.is((actual.value as { attempt: unknown }).attempt, -0)).toBe(false);
    });
  }

  test("the body is a copy", () => {
    const body = { limits: { ip: "x" } };
    const copy = copyEnvelope(envelope(body)).body as typeof body;
    copy.limits.ip = "y";
    expect(body.limits.ip).toBe("x");
  });
});
