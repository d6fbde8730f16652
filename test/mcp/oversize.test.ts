/**
 * An MCP message over the 1 MiB body limit (gateway/plugins/body-limit.ts) is answered as JSON-RPC, not with the REST
 * envelope (review F2-3, gateway/mcp/oversize.ts): 413, `{jsonrpc, id: null, error: {code: -32600, message, data:
 * {code: "payload_too_large", limitBytes}}}`, with the request id and `Connection: close`, on every MCP endpoint,
 * whether the length is declared (refused before routing) or the body comes chunked (cut while it is read).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rawRequest, repeatingBody } from "../helpers/raw-http.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const LIMIT = 1024 * 1024;
const ENDPOINTS = [`/${DEMO}/mcp`, `/${DEMO}/mcp/discovery`, `/${DEMO}/mcp/customer`, `/${DEMO}/mcp/checkout`, `/mcp/${DEMO}`, `/${DEMO}/mcp/`] as const;

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { LOG_LEVEL: "error" } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const expectedBody = (path: string) => ({
  jsonrpc: "2.0",
  id: null,
  error: { code: -32600, message: `Invalid Request: Request body exceeds ${LIMIT} bytes for ${path}.`, data: { code: "payload_too_large", limitBytes: LIMIT } },
});

/** Status line, lower-cased header map and parsed body of a raw HTTP/1.1 answer. */
function parse(answer: string): { status: number; headers: Map<string, string>; body: unknown } {
  const split = answer.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = answer.slice(0, split).split("\r\n");
  const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()] as [string, string]));
  return { status: Number(statusLine!.split(" ")[1]), headers, body: JSON.parse(answer.slice(split + 4)) };
}

describe("an MCP message over the body limit", () => {
  for (const path of ENDPOINTS) {
    test(`a declared Content-Length over 1 MiB on ${path} is 413 with a JSON-RPC error, the request id and Connection: close`, async () => {
      const { host } = new URL(srv.url);
      const requestId = `s-413-declared-${path.replaceAll("/", "_")}`;
      const answer = await rawRequest(
        srv,
        [`POST ${path} HTTP/1.1`, `Host: ${host}`, "Content-Type: application/json", "Accept: application/json, text/event-stream", `Content-Length: ${LIMIT + 1}`, `X-Request-Id: ${requestId}`].join("\r\n"),
        "{}",
      );
      const res = parse(answer);
      expect(res.status).toBe(413);
      expect(res.body).toEqual(expectedBody(path));
      expect(res.headers.get("x-request-id")).toBe(requestId);
      expect(res.headers.get("connection")).toBe("close");
      expect(res.headers.get("content-type")).toStartWith("application/json");
      expect(res.headers.get("x-agent-commerce")).toBe("1");
    });
  }

  for (const path of [`/${DEMO}/mcp`, `/${DEMO}/mcp/checkout`]) {
    test(`a chunked body cut at 1 MiB on ${path} is 413 with the same JSON-RPC error, not a parse error or the REST envelope`, async () => {
      const { body: stream, state } = repeatingBody(new TextEncoder().encode(" ".repeat(64 * 1024)), 256 * LIMIT);
      const res = await fetch(srv.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-request-id": "s-413-chunked" },
        body: stream,
        signal: AbortSignal.timeout(20_000),
      });
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual(expectedBody(path));
      expect(res.headers.get("x-request-id")).toBe("s-413-chunked");
      expect(res.headers.get("content-type")).toStartWith("application/json");
      // the address's buckets, as on every other answer of the endpoint
      expect(res.headers.get("x-ratelimit-limit")).toEqual(expect.any(String));
      expect(state.sent).toBeLessThan(256 * LIMIT);
    }, 30_000);
  }

  test("a REST route's body over the limit keeps the error envelope", async () => {
    const { host } = new URL(srv.url);
    const answer = await rawRequest(srv, [`POST /api/v1/auth/login HTTP/1.1`, `Host: ${host}`, "Content-Type: application/json", `Content-Length: ${LIMIT + 1}`].join("\r\n"), "{}");
    const res = parse(answer);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ success: false, code: "payload_too_large", error: `Request body exceeds ${LIMIT} bytes for /api/v1/auth/login.`, details: { limitBytes: LIMIT } });
  });
});
