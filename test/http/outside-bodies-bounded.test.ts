/**
 * Security audit C-1: outside servers' answers are read with a byte cap (infra/outbound-http.ts), through the real
 * server. A local upstream streams a huge body (or declares one) and counts the bytes its socket accepted before the
 * connection closed: once the cap is passed the gateway stops reading and closes the connection, so the count stays
 * near the cap plus the loopback socket buffers (a few MiB), far below the body's size — the gateway's memory cannot
 * have grown by the body. Before the fix the whole body was read (3 CIMD requests: 126 MB → 867 MB RSS).
 *  - a Client ID Metadata Document (GET /oauth/authorize, POST /oauth/token; 16 KiB, docs/access.md), and the cap
 *    on CIMD fetches in flight (past it: 503 service_unavailable at once, not queued);
 *  - the merchant platform's answer to check_live_availability (anonymous MCP; 4 KiB, docs/mcp-tools.md).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { CIMD_MAX_BYTES, CIMD_MAX_IN_FLIGHT } from "../../gateway/oauth/clients.ts";
import { PLATFORM_ANSWER_MAX_BYTES } from "../../gateway/mcp/tools/integrations.ts";
import { DEMO, DEMO_PRODUCT, rpc } from "../mcp/helpers.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/** The body an endless answer would send if nobody stopped it. */
const BODY_BYTES = 64 * 1024 * 1024;
/** What the upstream may have pushed into the socket buffers before the close reaches it: well under BODY_BYTES. */
const NEAR_THE_CAP = 16 * 1024 * 1024;

interface Exchange {
  path: string;
  written: number;
  closed: boolean;
}

/**
 * A raw HTTP/1.1 upstream: `/endless/…` streams chunked 'x' with no length, `/declared/…` declares a Content-Length
 * of 1 GiB and streams it, `/slow/…` waits SLOW_MS and answers 404, `/stock/<n>` answers a valid stock body padded
 * with spaces to exactly n bytes. Each exchange records the bytes the socket accepted and whether it has closed.
 */
function upstream() {
  const exchanges: Exchange[] = [];
  let open = 0;
  let maxOpen = 0;
  const chunk = Buffer.alloc(64 * 1024, "x");
  const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]);
  const pump = (sock: Socket, ex: Exchange, piece: Buffer, done: () => void) => {
    const go = () => {
      while (!sock.destroyed) {
        if (ex.written >= BODY_BYTES) return done();
        ex.written += chunk.length;
        if (!sock.write(piece)) return void sock.once("drain", go);
      }
    };
    go();
  };
  const server: Server = createServer((sock) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    sock.on("error", () => {});
    let ex: Exchange | undefined;
    sock.on("close", () => {
      open--;
      if (ex) ex.closed = true;
    });
    sock.once("data", (data) => {
      const path = /^[A-Z]+ (\S+)/.exec(data.toString("latin1"))?.[1] ?? "/";
      ex = { path, written: 0, closed: false };
      exchanges.push(ex);
      if (path.startsWith("/endless/")) {
        sock.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n");
        pump(sock, ex, frame, () => sock.end("0\r\n\r\n"));
      } else if (path.startsWith("/declared/")) {
        sock.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${2 ** 30}\r\n\r\n`);
        pump(sock, ex, chunk, () => sock.end());
      } else if (path.startsWith("/slow/")) {
        setTimeout(() => sock.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"), SLOW_MS);
      } else if (path.startsWith("/stock/")) {
        const size = Number(path.split("/")[2]);
        const json = '{"in_stock":true,"quantity":3}';
        const body = json + " ".repeat(size - json.length);
        sock.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      } else {
        sock.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
      }
    });
  });
  return {
    server,
    exchanges,
    get maxOpen() {
      return maxOpen;
    },
    resetMaxOpen() {
      maxOpen = open;
    },
  };
}

const SLOW_MS = 2_000;
let srv: TestServer;
let up: ReturnType<typeof upstream>;
let base: string;

beforeAll(async () => {
  up = upstream();
  await new Promise<void>((r) => up.server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(up.server.address() as { port: number }).port}`;
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, ALLOW_PRIVATE_URLS: true } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
  up?.server.close();
});

/** The upstream's exchange for `path` once its connection has closed (the gateway hung up or it finished). */
async function closedExchange(path: string): Promise<Exchange> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ex = up.exchanges.find((e) => e.path === path);
    if (ex?.closed) return ex;
    if (Date.now() > deadline) throw new Error(`the connection for ${path} is still open (${ex?.written ?? "no"} bytes written)`);
    await Bun.sleep(20);
  }
}

let n = 0;
const authorize = (clientId: string) =>
  srv.fetch(`/api/v1/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: "https://client.example/cb" })}`);

describe("Client ID Metadata Documents", () => {
  test("an endless document: /authorize answers the unknown-client page, and the fetch stopped near 16 KiB", async () => {
    const path = `/endless/doc-${++n}.json`;
    const started = performance.now();
    const r = await authorize(base + path);
    const elapsed = performance.now() - started;
    expect(r.status).toBe(400);
    expect(await r.text()).toContain("Unknown client.");
    expect(elapsed).toBeLessThan(4_000); // the fetch deadline is 5 s: it was stopped, not timed out
    const ex = await closedExchange(path);
    expect(ex.written).toBeGreaterThan(CIMD_MAX_BYTES);
    expect(ex.written).toBeLessThan(NEAR_THE_CAP);
  });

  test("a document declaring 1 GiB is refused by its Content-Length and the connection closed", async () => {
    const path = `/declared/doc-${++n}.json`;
    const r = await authorize(base + path);
    expect(r.status).toBe(400);
    expect(await r.text()).toContain("Unknown client.");
    const ex = await closedExchange(path);
    expect(ex.written).toBeLessThan(NEAR_THE_CAP);
  });

  test("the token endpoint with an endless document as client_id answers 401 invalid_client, and the fetch stopped near the cap", async () => {
    const path = `/endless/doc-${++n}.json`;
    const r = await srv.json("/api/v1/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code: "x", code_verifier: "y".repeat(43), client_id: base + path }).toString(),
    });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ error: "invalid_client", code: "invalid_client" });
    const ex = await closedExchange(path);
    expect(ex.written).toBeLessThan(NEAR_THE_CAP);
  });

  test(`past ${CIMD_MAX_IN_FLIGHT} document fetches in flight, the next request is 503 service_unavailable at once, and is not cached`, async () => {
    up.resetMaxOpen();
    const extra = 3;
    const ids = Array.from({ length: CIMD_MAX_IN_FLIGHT + extra }, () => `${base}/slow/doc-${++n}.json`);
    const answers = ids.map(async (id) => {
      const started = performance.now();
      const res = await authorize(id);
      const text = await res.text();
      return { status: res.status, text, ms: performance.now() - started };
    });
    // the slow ones hold their slots for SLOW_MS; the refused ones do not wait for them
    const results = await Promise.all(answers);
    const busy = results.filter((x) => x.status === 503);
    const fetched = results.filter((x) => x.status === 400);
    expect(busy.length).toBe(extra);
    expect(fetched.length).toBe(CIMD_MAX_IN_FLIGHT);
    for (const b of busy) {
      expect(b.ms).toBeLessThan(SLOW_MS / 2);
      expect(JSON.parse(b.text)).toMatchObject({ success: false, code: "service_unavailable", details: { reason: "client_metadata_fetches_busy", limit: CIMD_MAX_IN_FLIGHT } });
    }
    for (const f of fetched) expect(f.ms).toBeGreaterThanOrEqual(SLOW_MS - 100);
    expect(up.maxOpen).toBeLessThanOrEqual(CIMD_MAX_IN_FLIGHT);
    // a refused id was never fetched nor cached as unknown: asked again with the slots free, it is fetched now
    const refusedId = ids[results.findIndex((x) => x.status === 503)]!;
    const seen = up.exchanges.length;
    const again = await authorize(refusedId);
    expect(again.status).toBe(400);
    expect(up.exchanges.slice(seen).map((e) => e.path)).toEqual([new URL(refusedId).pathname]);
  }, 30_000);
});

describe("check_live_availability's platform answer", () => {
  async function withEndpoint<T>(endpoint: string, run: () => Promise<T>): Promise<T> {
    const [before] = await srv.db.sql<{ attributes: Record<string, unknown> }[]>`SELECT attributes FROM products WHERE id = ${DEMO_PRODUCT}`;
    await srv.db.sql`UPDATE products SET attributes = attributes || ${srv.db.sql.json({ platform_endpoint: endpoint })} WHERE id = ${DEMO_PRODUCT}`;
    try {
      return await run();
    } finally {
      await srv.db.sql`UPDATE products SET attributes = ${srv.db.sql.json(before!.attributes as never)} WHERE id = ${DEMO_PRODUCT}`;
    }
  }
  const check = () => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "check_live_availability", arguments: { product_id: DEMO_PRODUCT } });

  test("an endless answer is UPSTREAM_RESPONSE_INVALID (too_large) for an anonymous caller, and the read stopped near 4 KiB", async () => {
    const path = `/endless/stock-${++n}`;
    const started = performance.now();
    const r = await withEndpoint(base + path, check);
    const elapsed = performance.now() - started;
    const e = r.body.result.structuredContent.error;
    expect(e).toMatchObject({ code: "UPSTREAM_RESPONSE_INVALID", retryable: false, details: { reason: "too_large", limit_bytes: PLATFORM_ANSWER_MAX_BYTES } });
    expect(elapsed).toBeLessThan(2_500); // the platform deadline is 3 s: it was stopped, not timed out
    const ex = await closedExchange(path);
    expect(ex.written).toBeLessThan(NEAR_THE_CAP);
  });

  test("an answer declaring 1 GiB is refused by its Content-Length", async () => {
    const path = `/declared/stock-${++n}`;
    const r = await withEndpoint(base + path, check);
    expect(r.body.result.structuredContent.error).toMatchObject({ code: "UPSTREAM_RESPONSE_INVALID", details: { reason: "too_large" } });
    const ex = await closedExchange(path);
    expect(ex.written).toBeLessThan(NEAR_THE_CAP);
  });

  test("an answer of exactly the cap is read; one byte more is refused", async () => {
    const ok = await withEndpoint(`${base}/stock/${PLATFORM_ANSWER_MAX_BYTES}`, check);
    expect(ok.body.result.structuredContent).toMatchObject({ productId: DEMO_PRODUCT, inStock: true, quantity: 3, source: "merchant_platform" });
    const over = await withEndpoint(`${base}/stock/${PLATFORM_ANSWER_MAX_BYTES + 1}`, check);
    expect(over.body.result.structuredContent.error).toMatchObject({ code: "UPSTREAM_RESPONSE_INVALID", details: { reason: "too_large" } });
  });
});
