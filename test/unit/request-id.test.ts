import { describe, expect, test } from "bun:test";
import { newRequestId, requestIdFor } from "../../gateway/plugins/request-id.ts";

const SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("request ids", () => {
  test("a fresh id is a random UUID: unique, and no part of it is shared with the ids before it (audit M-10)", () => {
    const ids = Array.from({ length: 5000 }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(SHAPE);
    expect(new Set(ids).size).toBe(ids.length);
    // no per-process prefix (a restart or the number of gateways would show) and no counter (the request volume would)
    expect(new Set(ids.map((id) => id.slice(0, 13))).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(24))).size).toBe(ids.length);
  });

  test("a sane caller id is kept and anything else is replaced by a fresh one", () => {
    const withId = (v: string) => new Request("http://x/", { headers: { "x-request-id": v } });
    expect(requestIdFor(withId("trace-abc-12345"))).toBe("trace-abc-12345");
    expect(requestIdFor(withId("<script>alert(1)</script>"))).toMatch(SHAPE);
    expect(requestIdFor(withId("short"))).toMatch(SHAPE);
    expect(requestIdFor(new Request("http://x/"))).toMatch(SHAPE);
  });
});
