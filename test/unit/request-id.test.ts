import { describe, expect, test } from "bun:test";
import { newRequestId, requestIdFor } from "../../gateway/plugins/request-id.ts";

const SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const counterOf = (id: string) => parseInt(id.slice(24), 16);

describe("request ids", () => {
  test("a fresh id is a UUID-shaped per-process prefix followed by a counter that goes up by one", () => {
    const ids = Array.from({ length: 5000 }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(SHAPE);
    expect(new Set(ids.map((id) => id.slice(0, 24))).size).toBe(1);
    for (let i = 1; i < ids.length; i++) expect(counterOf(ids[i]!)).toBe(counterOf(ids[i - 1]!) + 1);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("the counter carries from its low 24 bits into the high ones without repeating or skipping", () => {
    let prev = newRequestId();
    // run up to just before the next multiple of 2^24, then look at every id across the carry
    const toCarry = 0x1000000 - (counterOf(prev) % 0x1000000) - 3;
    for (let i = 0; i < toCarry; i++) prev = newRequestId();
    for (let i = 0; i < 6; i++) {
      const id = newRequestId();
      expect(id).toMatch(SHAPE);
      expect(id.slice(0, 24)).toBe(prev.slice(0, 24));
      expect(counterOf(id)).toBe(counterOf(prev) + 1);
      prev = id;
    }
    expect(counterOf(prev) % 0x1000000).toBe(3);
  });

  test("a sane caller id is kept and anything else is replaced by a fresh one", () => {
    const withId = (v: string) => new Request("http://x/", { headers: { "x-request-id": v } });
    expect(requestIdFor(withId("trace-abc-12345"))).toBe("trace-abc-12345");
    expect(requestIdFor(withId("<script>alert(1)</script>"))).toMatch(SHAPE);
    expect(requestIdFor(withId("short"))).toMatch(SHAPE);
    expect(requestIdFor(new Request("http://x/"))).toMatch(SHAPE);
  });
});
