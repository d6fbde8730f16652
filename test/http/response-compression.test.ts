/**
 * Large JSON answers are compressed by Accept-Encoding (gateway/plugins/compression.ts): zstd when offered, else gzip,
 * from COMPRESS_MIN_BYTES up, with every other header kept; small answers (the ones that carry secrets), errors, HTML,
 * HEAD and the MCP event stream never are. The client here is fetch with `decompress: false`, which sends no
 * Accept-Encoding of its own and hands back the bytes as they came.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/** gateway/plugins/compression.ts COMPRESS_MIN_BYTES, written out so this file runs against a gateway without the plugin too. */
const COMPRESS_MIN_BYTES = 8 * 1024;
const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
const MCP_PATH = "/demo-store/mcp";
const MCP_VERSION = "2025-11-25";
const MCP_BASE = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MCP_VERSION };

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { tier: "ENTERPRISE" });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** One exchange as it went over the wire: the body's bytes undecoded. */
async function raw(path: string, init: RequestInit & { acceptEncoding?: string } = {}) {
  const headers = new Headers(init.headers);
  if (init.acceptEncoding !== undefined) headers.set("accept-encoding", init.acceptEncoding);
  const res = await srv.fetch(path, { ...init, headers, decompress: false } as RequestInit);
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

const search = (acceptEncoding?: string) =>
  raw("/api/v1/agent/search", {
    method: "POST",
    headers: { ...key.headers, "content-type": "application/json" },
    body: JSON.stringify({ query: "shirt", limit: 100 }),
    acceptEncoding,
  });

function decoded(res: { headers: Headers; bytes: Uint8Array }): string {
  const coding = res.headers.get("content-encoding");
  const bytes = coding === "gzip" ? Bun.gunzipSync(res.bytes as Uint8Array<ArrayBuffer>) : coding === "zstd" ? Bun.zstdDecompressSync(res.bytes) : res.bytes;
  return new TextDecoder().decode(bytes);
}

const varyOf = (headers: Headers) => (headers.get("vary") ?? "").split(",").map((v) => v.trim().toLowerCase());

describe("a large JSON answer", () => {
  test("a 100-result search asked with gzip comes gzip-compressed, its decoded body the identity answer's", async () => {
    const identity = await search();
    expect(identity.status).toBe(200);
    expect(identity.headers.get("content-encoding")).toBeNull();
    expect(identity.bytes.byteLength).toBeGreaterThanOrEqual(COMPRESS_MIN_BYTES);

    const gzip = await search("gzip");
    expect(gzip.status).toBe(200);
    expect(gzip.headers.get("content-encoding")).toBe("gzip");
    expect(varyOf(gzip.headers)).toContain("accept-encoding");
    expect(gzip.headers.get("content-type")).toBe("application/json;charset=utf-8");
    expect(Number(gzip.headers.get("content-length"))).toBe(gzip.bytes.byteLength);
    expect(gzip.bytes.byteLength).toBeLessThan(identity.bytes.byteLength / 3);
    // the same answer but for the search's own timing
    const untimed = (text: string) => JSON.parse(text, (k, v) => (k === "tookMs" ? undefined : v));
    const body = untimed(decoded(gzip));
    expect(body).toEqual(untimed(new TextDecoder().decode(identity.bytes)));
    expect(body.success).toBe(true);
  });

  test("zstd is preferred when offered beside gzip, and the client's q-values rank them", async () => {
    const both = await search("gzip, deflate, br, zstd");
    expect(both.headers.get("content-encoding")).toBe("zstd");
    expect(JSON.parse(decoded(both)).success).toBe(true);
    expect((await search("zstd;q=0.5, gzip")).headers.get("content-encoding")).toBe("gzip");
    expect((await search("*")).headers.get("content-encoding")).toBe("zstd");
    expect((await search("x-gzip")).headers.get("content-encoding")).toBe("gzip");
    expect((await search("GZIP;Q=0.8")).headers.get("content-encoding")).toBe("gzip");
  });

  test("no Accept-Encoding, a refused coding, identity only or identity ranked first give the identity answer", async () => {
    for (const acceptEncoding of [undefined, "gzip;q=0", "gzip;q=0, zstd;q=0", "*;q=0", "identity", "br", "gzip;q=0.5, identity", "gzip;q=2"]) {
      const res = await search(acceptEncoding);
      expect({ acceptEncoding, status: res.status, coding: res.headers.get("content-encoding") }).toEqual({ acceptEncoding, status: 200, coding: null });
      expect(JSON.parse(new TextDecoder().decode(res.bytes)).success).toBe(true);
    }
  });

  test("a compressed answer keeps its request id, transparency, rate-limit and cache headers", async () => {
    const res = await search("zstd");
    expect(res.headers.get("content-encoding")).toBe("zstd");
    expect(res.headers.get("x-request-id")).toMatch(/^[\w-]{8,}$/);
    expect(res.headers.get("x-agent-commerce")).toBe("1");
    expect(res.headers.get("x-initiated-by")).toBe("ai-agent");
    expect(res.headers.get("x-ai-act-transparency")).toBe("agent-initiated-transaction");
    expect(res.headers.get("x-ratelimit-limit")).not.toBeNull();
    expect(res.headers.get("x-ratelimit-remaining")).not.toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  test("the MCP fast path's tools/list (a string answer) and the OpenAPI document (a Response) are compressed too", async () => {
    const list = await raw(MCP_PATH, {
      method: "POST",
      headers: { ...MCP_BASE, ...key.headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      acceptEncoding: "gzip",
    });
    expect(list.status).toBe(200);
    expect(list.headers.get("content-encoding")).toBe("gzip");
    expect(list.headers.get("content-type")).toBe("application/json");
    expect(list.headers.get("x-request-id")).not.toBeNull();
    expect(list.headers.get("cache-control")).toBe("no-store");
    expect(JSON.parse(decoded(list)).result.tools.length).toBeGreaterThan(0);

    const doc = await raw("/api/v1/openapi.json", { acceptEncoding: "zstd" });
    expect(doc.status).toBe(200);
    expect(doc.headers.get("content-encoding")).toBe("zstd");
    expect(varyOf(doc.headers)).toContain("accept-encoding");
    expect(doc.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(doc.headers.get("x-request-id")).not.toBeNull();
    expect(Number(doc.headers.get("content-length"))).toBe(doc.bytes.byteLength);
    expect(JSON.parse(decoded(doc)).openapi).toBe("3.1.0");
  });

  test("the OpenAPI document is served from one compressed copy per coding, each decoding to the identity document", async () => {
    const identity = await raw("/api/v1/openapi.json", {});
    expect(identity.headers.get("content-encoding")).toBeNull();
    const text = new TextDecoder().decode(identity.bytes);
    for (const coding of ["zstd", "gzip"]) {
      const first = await raw("/api/v1/openapi.json", { acceptEncoding: coding });
      const second = await raw("/api/v1/openapi.json", { acceptEncoding: coding });
      expect(first.headers.get("content-encoding")).toBe(coding);
      expect(second.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
      expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
      expect(decoded(first)).toBe(text);
    }
  });

  test("the metrics count a compressed answer under its route and real status", async () => {
    const line = 'http_requests_total{method="POST",route="/api/v1/agent/search",status="200"}';
    const count = async () => {
      const text = await (await srv.fetch("/metrics")).text();
      const found = text.split("\n").find((l) => l.startsWith(line));
      return found === undefined ? 0 : Number(found.slice(line.length).trim());
    };
    const before = await count();
    expect((await search("gzip")).headers.get("content-encoding")).toBe("gzip");
    // the after-response hook runs after the answer is sent
    await Bun.sleep(50);
    expect(await count()).toBe(before + 1);
  });
});

describe("never compressed", () => {
  test("a login answer (a bearer token) and a new key's answer (its secret) stay identity", async () => {
    const login = await raw("/api/v1/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ADMIN), acceptEncoding: "gzip, zstd" });
    expect(login.status).toBe(200);
    expect(login.headers.get("content-encoding")).toBeNull();
    const token = JSON.parse(new TextDecoder().decode(login.bytes)).data.token as string;
    const created = await raw("/api/v1/agent-keys", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "compression test" }),
      acceptEncoding: "gzip, zstd",
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("content-encoding")).toBeNull();
    expect(JSON.parse(new TextDecoder().decode(created.bytes)).data.key).toStartWith("agnt_");
  });

  test("a cart (a small answer) stays identity", async () => {
    const cart = await raw("/api/v1/agent/cart", {
      method: "POST",
      headers: { ...key.headers, "content-type": "application/json" },
      body: JSON.stringify({ items: [{ product_id: SHAMPOO, quantity: 1 }] }),
      acceptEncoding: "gzip, zstd",
    });
    expect(cart.status).toBe(201);
    expect(cart.headers.get("content-encoding")).toBeNull();
    expect(JSON.parse(new TextDecoder().decode(cart.bytes)).success).toBe(true);
  });

  test("an error envelope keeps its status, code and headers, uncompressed", async () => {
    const missing = await raw("/api/v1/agent/products/00000000-0000-4000-8000-000000000000", { headers: key.headers, acceptEncoding: "gzip, zstd" });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-encoding")).toBeNull();
    expect(missing.headers.get("x-request-id")).not.toBeNull();
    expect(JSON.parse(new TextDecoder().decode(missing.bytes))).toMatchObject({ success: false, code: "not_found" });
    // a refusal before routing (the global error handler's path) keeps its body too
    const noRoute = await raw("/api/v1/no-such-route", { acceptEncoding: "gzip, zstd" });
    expect(noRoute.status).toBe(404);
    expect(noRoute.headers.get("content-encoding")).toBeNull();
    expect(JSON.parse(new TextDecoder().decode(noRoute.bytes))).toMatchObject({ success: false, code: "route_not_found" });
    // a 400 quoting the caller's input (a long query value), whatever it echoes
    const bad = await raw("/api/v1/agent/search", {
      method: "POST",
      headers: { ...key.headers, "content-type": "application/json" },
      body: JSON.stringify({ query: "x".repeat(20_000), limit: 100 }),
      acceptEncoding: "gzip, zstd",
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("content-encoding")).toBeNull();
    expect(JSON.parse(new TextDecoder().decode(bad.bytes)).code).toBe("validation_error");
  });

  test("HEAD of a large document is not compressed", async () => {
    const head = await raw("/api/v1/openapi.json", { method: "HEAD", acceptEncoding: "gzip, zstd" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-encoding")).toBeNull();
    expect(head.bytes.byteLength).toBe(0);
  });

  test("the dashboard's HTML login page is not compressed", async () => {
    const page = await raw("/dashboard/login", { acceptEncoding: "gzip, zstd" });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    expect(page.headers.get("content-encoding")).toBeNull();
  });

  test("the health route (native, ahead of the plugins) is not compressed", async () => {
    const health = await raw("/api/v1/health", { acceptEncoding: "gzip, zstd" });
    expect(health.headers.get("content-encoding")).toBeNull();
    expect(JSON.parse(new TextDecoder().decode(health.bytes)).success).toBe(true);
  });

  test("an MCP session's GET event stream keeps streaming, uncompressed", async () => {
    const init = await srv.fetch(MCP_PATH, {
      method: "POST",
      headers: { ...MCP_BASE, ...key.headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: MCP_VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    });
    await init.text();
    expect(init.status).toBe(200);
    const session = { ...key.headers, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": MCP_VERSION };
    await (await srv.fetch(MCP_PATH, { method: "POST", headers: { ...MCP_BASE, ...session }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();
    const stream = await srv.fetch(MCP_PATH, { method: "GET", headers: { ...session, accept: "text/event-stream", "accept-encoding": "gzip, zstd" }, decompress: false } as RequestInit);
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toStartWith("text/event-stream");
    expect(stream.headers.get("content-encoding")).toBeNull();
    // its first bytes arrive while the stream stays open: nothing buffered it to compress it whole
    const reader = stream.body!.getReader();
    const first = await Promise.race([reader.read(), Bun.sleep(5_000).then(() => null)]);
    expect(first).not.toBeNull();
    expect(new TextDecoder().decode(first!.value)).toContain(": stream open");
    await reader.cancel();
  });
});
