/**
 * How a thrown value becomes an MCP tool error (gateway/mcp/errors.ts, gateway/mcp/dispatch.ts), without I/O:
 * an unexpected fault must be INTERNAL_ERROR / retry_with_backoff / retryable with no internals in the result.
 */
import { describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { fail } from "../../actors/runtime/errors.ts";
import type { StoreRecord } from "../../actors/store/schemas.ts";
import type { Services } from "../../gateway/services.ts";
import { buildToolTable, runTool } from "../../gateway/mcp/dispatch.ts";
import { resultFromThrown } from "../../gateway/mcp/errors.ts";
import { defineTool, type ToolContext } from "../../gateway/mcp/registry.ts";

const SITE = "https://shop.example";
const SECRET = "postgres://acs:hunter2@10.0.0.5/acs";

function throwing(name: string, thrown: () => unknown) {
  return defineTool({
    name,
    title: name,
    description: `A test tool that throws (${name}).`,
    group: "discovery",
    input: T.Object({}),
    output: T.Object({}),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    auth: "public",
    confirmation: false,
    async handler() {
      throw thrown();
    },
  });
}

const tools = buildToolTable([
  throwing("plain_fault", () => new Error(`connect ECONNREFUSED ${SECRET}`)),
  throwing("type_fault", () => new TypeError("Cannot read properties of undefined (reading 'priceMinor')")),
  throwing("rest_internal", () => fail("internal_error", `pool exhausted at ${SECRET}`)),
  throwing("not_an_error", () => ({ weird: SECRET })),
]);

// Only what runTool reads of the context on these paths: the site URL and the store slug (logging).
const ctx = { svc: { siteUrl: SITE } as unknown as Services, store: { slug: "s" } as unknown as StoreRecord, endpoint: "main", caller: null } as unknown as ToolContext;

async function call(name: string) {
  return runTool(tools.byName.get(name), name, {}, ctx);
}

describe("an unexpected fault in a tool", () => {
  for (const [name, what] of [["plain_fault", "a plain Error"], ["type_fault", "a TypeError"], ["not_an_error", "a thrown non-Error value"]] as const) {
    test(`${what} becomes INTERNAL_ERROR, retry with backoff, retryable, call scope`, async () => {
      const r = await call(name);
      expect(r.isError).toBe(true);
      const e = (r.structuredContent as { error: Record<string, unknown> }).error;
      expect(e).toMatchObject({ code: "INTERNAL_ERROR", remedy: "retry_with_backoff", retryable: true, scope: "call", details: {}, reference: `${SITE}/docs/errors#INTERNAL_ERROR` });
    });
  }

  test("the result shows nothing of the fault's message", async () => {
    for (const name of ["plain_fault", "type_fault", "not_an_error"]) {
      const text = JSON.stringify(await call(name));
      expect(text).not.toContain("hunter2");
      expect(text).not.toContain("ECONNREFUSED");
      expect(text).not.toContain("priceMinor");
    }
  });

  test("a REST internal_error raised by a shared application function is INTERNAL_ERROR on MCP", async () => {
    const e = ((await call("rest_internal")).structuredContent as { error: Record<string, unknown> }).error;
    expect(e.code).toBe("INTERNAL_ERROR");
    expect(e.remedy).toBe("retry_with_backoff");
    expect(e.retryable).toBe(true);
  });
});

describe("resultFromThrown", () => {
  test("a thrown table code keeps its code, remedy and details", () => {
    const r = resultFromThrown(SITE, fail("UPSTREAM_UNAVAILABLE", "platform timed out", { timeout_ms: 3000 }));
    expect((r.structuredContent as any).error).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", remedy: "retry_with_backoff", retryable: true, details: { timeout_ms: 3000 } });
  });

  test("an object with an unknown code is an unexpected fault", () => {
    const r = resultFromThrown(SITE, Object.assign(new Error("x"), { code: "EPIPE" }));
    expect((r.structuredContent as any).error.code).toBe("INTERNAL_ERROR");
    expect(r.content[0]!.text).toBe(`INTERNAL_ERROR: Unexpected fault. (remedy: retry with backoff; ${SITE}/docs/errors#INTERNAL_ERROR)`);
  });
});
