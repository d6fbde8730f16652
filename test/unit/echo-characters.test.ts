/**
 * An error quotes at most ECHO_MAX_CHARS (100) characters of a caller's value, counted in characters (code points) as
 * every bound is: a cut at 100 UTF-16 units split an emoji in two and quoted a lone surrogate half (helper C, session
 * 22). REST's 400 texts (cutEcho) and MCP's `details.value` (echoedValue) cut alike.
 */
import { describe, expect, test } from "bun:test";
import { cutEcho, ECHO_MAX_CHARS } from "../../infra/echo.ts";
import { echoedValue } from "../../gateway/mcp/dispatch.ts";

const hasLoneSurrogate = (s: string) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

describe("quoting a caller's value back", () => {
  test("150 emoji are cut to 100 whole emoji and an ellipsis, never half of one", () => {
    const cut = cutEcho("😀".repeat(150));
    expect(cut).toBe(`${"😀".repeat(100)}…`);
    expect(hasLoneSurrogate(cut)).toBe(false);
  });

  test("an ASCII letter then emoji is cut after 100 characters, not 100 UTF-16 units", () => {
    const cut = cutEcho(`a${"😀".repeat(150)}`);
    expect(cut).toBe(`a${"😀".repeat(99)}…`);
    expect(hasLoneSurrogate(cut)).toBe(false);
  });

  test("100 emoji (200 UTF-16 units) are 100 characters: quoted whole, not cut", () => {
    expect(cutEcho("😀".repeat(ECHO_MAX_CHARS))).toBe("😀".repeat(ECHO_MAX_CHARS));
    expect(echoedValue("😀".repeat(ECHO_MAX_CHARS))).toEqual({ value: "😀".repeat(ECHO_MAX_CHARS), valueType: "string" });
  });

  test("MCP's details.value of 150 emoji is 100 whole emoji, marked truncated", () => {
    expect(echoedValue(`a${"😀".repeat(150)}`)).toEqual({ value: `a${"😀".repeat(99)}`, valueType: "string", valueTruncated: true });
  });

  test("plain text keeps its cut at 100 characters", () => {
    expect(cutEcho("x".repeat(101))).toBe(`${"x".repeat(100)}…`);
    expect(cutEcho("x".repeat(100))).toBe("x".repeat(100));
  });
});
