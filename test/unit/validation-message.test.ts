import { describe, expect, test } from "bun:test";
import { t } from "elysia";
import { pathPattern, RouteTable } from "../../gateway/plugins/route-table.ts";
import { CodePointString } from "../../gateway/plugins/schema-formats.ts";
import { describeSchema } from "../../infra/validation-message.ts";
import { Value } from "@sinclair/typebox/value";

describe("describeSchema", () => {
  test("a union of literals lists its values as allowed", () => {
    expect(describeSchema(t.Union([t.Literal("a"), t.Literal("b")]))).toEqual({ text: "one of 'a', 'b'", facts: { allowed: ["a", "b"] } });
  });

  test("Elysia's integer (a union with its numeric-string twin) reads as the integer and its bounds", () => {
    expect(describeSchema(t.Integer({ minimum: 1 }))).toEqual({ text: "an integer ≥ 1", facts: { type: "integer", minimum: 1 } });
    expect(describeSchema(t.Integer({ minimum: 1, maximum: 100 }))).toEqual({ text: "an integer from 1 to 100", facts: { type: "integer", minimum: 1, maximum: 100 } });
    expect(describeSchema(t.Number({ exclusiveMinimum: 0, maximum: 1 }))?.text).toBe("a number > 0 and ≤ 1");
    expect(describeSchema(t.Number({ maximum: 5 }))?.text).toBe("a number ≤ 5");
  });

  test("strings state their length bounds, and a mixed union joins its members' rules", () => {
    expect(describeSchema(t.String({ minLength: 1, maxLength: 10 }))?.text).toBe("a string of 1 to 10 characters");
    expect(describeSchema(t.String({ maxLength: 1 }))?.text).toBe("a string of at most 1 character");
    expect(describeSchema(t.Union([t.String(), t.Null()]))?.text).toBe("a string or null");
  });
});

describe("CodePointString", () => {
  test("counts characters as code points: 3 emoji fit a 3-character bound, 4 do not, and non-strings fail", () => {
    const s = CodePointString({ minLength: 1, maxLength: 3 });
    expect(Value.Check(s, "😀😀😀")).toBe(true);
    expect(Value.Check(s, "😀😀😀😀")).toBe(false);
    expect(Value.Check(s, "")).toBe(false);
    expect(Value.Check(s, 3)).toBe(false);
  });
});

describe("route table", () => {
  test("Elysia paths match their parameters, optional segments and wildcards, and nothing longer", () => {
    expect(pathPattern("/a/:id/b").test("/a/x1/b")).toBe(true);
    expect(pathPattern("/a/:id/b").test("/a/x1/b/c")).toBe(false);
    expect(pathPattern("/a/:id?").test("/a")).toBe(true);
    expect(pathPattern("/a/:id?").test("/a/1")).toBe(true);
    expect(pathPattern("/files/*").test("/files/x/y")).toBe(true);
    expect(pathPattern("/a.b").test("/aXb")).toBe(false);
  });

  test("the methods of every route at a path, with Bun's native routes included", () => {
    const table = new RouteTable({
      routes: [
        { method: "GET", path: "/x/:id" },
        { method: "DELETE", path: "/x/:id" },
        { method: "POST", path: "/y" },
      ],
      config: { serve: { routes: { "/health": { GET: () => new Response() } } } },
    });
    expect(table.allowedMethods("/x/1")).toEqual(["DELETE", "GET"]);
    expect(table.allowedMethods("/health")).toEqual(["GET"]);
    expect(table.allowedMethods("/z")).toEqual([]);
  });
});
