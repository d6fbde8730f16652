/**
 * An unknown tool's name is the caller's own text: TOOL_NOT_FOUND quotes it cut to ECHO_MAX_CHARS (100) characters,
 * like every other echo (docs/conventions.md). A 100,000-character name came back whole in the text, the message
 * and `details.tool`: a 300 kB answer (audit F-6). Through the MCP endpoint of the real server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ECHO_MAX_CHARS } from "../../infra/echo.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { rpc } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

describe("TOOL_NOT_FOUND", () => {
  test("quotes a 100,000-character tool name cut to 100 characters, so the answer stays small", async () => {
    const name = "a".repeat(100_000);
    const r = await rpc(srv, "/demo-store/mcp", "tools/call", { name, arguments: {} }, key.headers);
    expect(r.status).toBe(200);
    const error = r.body.result.structuredContent.error;
    expect(error.code).toBe("TOOL_NOT_FOUND");
    const shown = `${"a".repeat(ECHO_MAX_CHARS)}…`;
    expect(error.details.tool).toBe(shown);
    expect(error.message).toStartWith(`No tool '${shown}' on this endpoint of store demo-store`);
    expect(r.body.result.content[0].text).not.toContain("a".repeat(ECHO_MAX_CHARS + 1));
    expect(JSON.stringify(r.body).length).toBeLessThan(5_000);
  }, 30_000);

  test("quotes a short unknown name as it is", async () => {
    const r = await rpc(srv, "/demo-store/mcp", "tools/call", { name: "launch_rockets", arguments: {} }, key.headers);
    const error = r.body.result.structuredContent.error;
    expect(error.code).toBe("TOOL_NOT_FOUND");
    expect(error.details.tool).toBe("launch_rockets");
    expect(error.message).toStartWith("No tool 'launch_rockets' on this endpoint of store demo-store");
  }, 30_000);
});
