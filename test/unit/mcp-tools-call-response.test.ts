import { describe, expect, test } from "bun:test";
import { errorResult, successResult } from "../../gateway/mcp/errors.ts";
import { toolsCallResponse } from "../../gateway/mcp/server.ts";

describe("the fast-path tools/call response", () => {
  const data = { products: [{ id: "p1", title: 'Quote " and \\ backslash\nnewline', price: 12.5, tags: ["a", "ü"] }], meta: { total: 1, page: 1 } };

  test("a success response is byte-for-byte what JSON.stringify of the whole message gives", () => {
    const result = successResult(data);
    for (const id of [1, "req-7", 0]) {
      expect(toolsCallResponse(id, result)).toBe(JSON.stringify({ jsonrpc: "2.0", id, result }));
    }
  });

  test("the spliced structured content parses back to the tool's data and its text block to the same JSON", () => {
    const parsed = JSON.parse(toolsCallResponse(3, successResult(data))) as { result: { content: { text: string }[]; structuredContent: unknown } };
    expect(parsed.result.structuredContent).toEqual(data);
    expect(JSON.parse(parsed.result.content[0]!.text)).toEqual(data);
  });

  test("an error result, or a result whose text is not its serialised data, is serialised whole", () => {
    const err = errorResult("http://localhost", "INVALID_ARGUMENT", "bad", { field: "query" });
    expect(toolsCallResponse(4, err)).toBe(JSON.stringify({ jsonrpc: "2.0", id: 4, result: err }));
    const handMade = { content: [{ type: "text" as const, text: "3 products found" }], structuredContent: data };
    expect(toolsCallResponse(5, handMade)).toBe(JSON.stringify({ jsonrpc: "2.0", id: 5, result: handMade }));
  });
});
