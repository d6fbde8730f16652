/** strictBody's walk (audit W-7): which keys of a raw body a schema does not have. */
import { describe, expect, test } from "bun:test";
import { t } from "elysia";
import { unknownKeyOf } from "../../gateway/rest/strict-body.ts";

const Body = t.Object({
  code: t.String(),
  rule: t.Optional(t.Union([t.Object({ min: t.Number() }), t.Null()])),
  zones: t.Optional(t.Array(t.Object({ name: t.String(), prefixes: t.Optional(t.Array(t.String())) }))),
  synonyms: t.Optional(t.Record(t.String(), t.Array(t.String()))),
  items: t.Optional(t.Array(t.Unknown())),
  open: t.Optional(t.Object({ a: t.Number() }, { additionalProperties: true })),
});
const pathOf = (raw: string) => unknownKeyOf(Body, JSON.parse(raw))?.path ?? null;

describe("unknownKeyOf", () => {
  test("names the first unknown key at any level", () => {
    expect(pathOf(`{"code":"x","cod":"y"}`)).toBe("/cod");
    expect(pathOf(`{"code":"x","rule":{"min":1,"max":2}}`)).toBe("/rule/max");
    expect(pathOf(`{"code":"x","zones":[{"name":"a"},{"name":"b","prefix":["1"]}]}`)).toBe("/zones/1/prefix");
  });
  test("keys every JS object has are unknown too (own properties only)", () => {
    expect(pathOf(`{"code":"x","constructor":1}`)).toBe("/constructor");
    expect(pathOf(`{"code":"x","toString":"y"}`)).toBe("/toString");
    expect(pathOf(`{"code":"x","__proto__":{"a":1}}`)).toBe("/__proto__");
  });
  test("free keys (records), unknown items, open objects, null members and non-objects pass", () => {
    expect(pathOf(`{"code":"x","synonyms":{"tv":["television"]},"items":[{"any":1}],"open":{"a":1,"b":2},"rule":null}`)).toBeNull();
    expect(pathOf(`[1,2]`)).toBeNull();
    expect(pathOf(`"text"`)).toBeNull();
    expect(pathOf(`{"code":"x","rule":"not an object"}`)).toBeNull();
  });
});
