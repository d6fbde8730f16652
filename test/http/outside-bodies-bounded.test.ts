/**
 * Security audit C-1: outside servers' answers are read with a byte cap (infra/outbound-http.ts), through the real
 * server. A local upstream streams a huge body (or declares one) and counts the bytes its socket accepted before the
 * connection closed: once the cap is passed the gateway stops reading and closes the connection, so the count stays
 * near the cap plus the loopback socket buffers (a few MiB), far below the body's size — the gateway's memory cannot
 * have grown by the body. Before the fix the whole body was read (3 CIMD requests: 126 MB → 867 MB RSS).
 *  - a Client ID Metadata Document (GET /oauth/authorize, POST /oauth/token; 16 KiB, docs/access.md), and what one
 *    caller can hold of the fetches in flight (review R1-1: 2 per client address, 64 in all, one fetch per client_id,
 *    one 3 s deadline over the whole fetch, DNS included; past a cap 503 temporarily_unavailable at once, in the
 *    endpoint's own shape, with Retry-After; a known document served stale while its refetch fails);
 *  - the merchant platform's answer to check_live_availability (anonymous MCP; 4 KiB, docs/mcp-tools.md).
 *
 * Requests that must come from distinct client addresses are sent from 127.0.0.x / 127.0.y.z source addresses
 * (node:http `localAddress`), so each test has slots of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import {
  CIMD_DEADLINE_MS,
  CIMD_MAX_BYTES,
  CIMD_MAX_IN_FLIGHT,
  CIMD_MAX_IN_FLIGHT_PER_ADDRESS,
  CIMD_RETRY_AFTER_SECONDS,
  CIMD_STALE_MS,
  CIMD_TTL_MS,
  EXTRAS_CIMD_CLOCK,
  EXTRAS_CIMD_RESOLVER,
} from "../../gateway/oauth/clients.ts";
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
 * of 1 GiB and streams it, `/hold/…` answers 404 only when the test calls `release()`, `/trickle/…` sends a chunked
 * body of one space every 200 ms forever, `/gone/…` answers 404 at once, `/doc/…` answers a valid metadata document
 * naming its own URL (or the status `override` has for its path), `/stock/<n>` answers a valid stock body padded with
 * spaces to exactly n bytes, `/badgz/…` a stock body labelled gzip but sent plain. Each exchange records the bytes
 * the socket accepted and whether it has closed.
 */
function upstream() {
  const exchanges: Exchange[] = [];
  const held: Socket[] = [];
  /** Paths of `/doc/…` answered with this status instead of the document. */
  const override = new Map<string, number>();
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
      } else if (path.startsWith("/hold/")) {
        held.push(sock);
      } else if (path.startsWith("/trickle/")) {
        sock.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n");
        const timer = setInterval(() => (sock.destroyed ? clearInterval(timer) : sock.write("1\r\n \r\n")), 200);
      } else if (path.startsWith("/doc/") && !override.has(path)) {
        const host = /\r\nhost: ([^\r]+)/i.exec(data.toString("latin1"))?.[1];
        const body = JSON.stringify({ client_id: `http://${host}${path}`, client_name: "Doc Client", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" });
        sock.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      } else if (path.startsWith("/doc/")) {
        sock.end(`HTTP/1.1 ${override.get(path)} Refused\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
      } else if (path.startsWith("/badgz/")) {
        const body = '{"in_stock":true,"quantity":3}';
        sock.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
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
    override,
    /** Answers every held request (404) and forgets them. */
    release() {
      for (const sock of held.splice(0)) sock.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    },
    /** Resolves once `count` requests for paths starting with `prefix` have arrived. */
    async arrived(prefix: string, count: number) {
      const deadline = Date.now() + 10_000;
      while (exchanges.filter((e) => e.path.startsWith(prefix)).length < count) {
        if (Date.now() > deadline) throw new Error(`only ${exchanges.filter((e) => e.path.startsWith(prefix)).length} of ${count} requests for ${prefix} arrived`);
        await Bun.sleep(10);
      }
    },
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    resetMaxOpen() {
      maxOpen = open;
    },
  };
}

const CALLBACK = "https://client.example/cb";
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
  up?.release();
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
  srv.fetch(`/api/v1/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: CALLBACK })}`);

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  ms: number;
}

/** One HTTP request to the gateway from the given loopback source address. */
function requestFrom(from: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const url = new URL(srv.url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: Number(url.port), path, method: init.method ?? "GET", headers: init.headers ?? {}, localAddress: from }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, ms: performance.now() - started }));
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

/** The consent page's request for `clientId` (every parameter valid: a known client gets 200). */
const authorizeFrom = (from: string, clientId: string) =>
  requestFrom(
    from,
    `/api/v1/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: CALLBACK, code_challenge: "a".repeat(43), code_challenge_method: "S256", resource: `${srv.url}/${DEMO}/mcp` })}`,
  );

/**
 * A refresh at the token endpoint with a refresh token nobody issued: 400 invalid_grant says the client was known,
 * 401 invalid_client that it was not, 503 that it could not be looked up.
 */
const refreshFrom = (from: string, clientId: string, endpoint: "token" | "revoke" = "token") =>
  requestFrom(from, `/api/v1/oauth/${endpoint}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(endpoint === "token" ? { grant_type: "refresh_token", refresh_token: "rt_nobody", client_id: clientId } : { token: "rt_nobody", client_id: clientId }).toString(),
  });

/** Moves the metadata cache's clock `ms` ahead of real time for `run`. */
async function later<T>(ms: number, run: () => Promise<T>): Promise<T> {
  srv.running.services.extras.set(EXTRAS_CIMD_CLOCK, () => Date.now() + ms);
  try {
    return await run();
  } finally {
    srv.running.services.extras.delete(EXTRAS_CIMD_CLOCK);
  }
}

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

  test(`one address holds at most ${CIMD_MAX_IN_FLIGHT_PER_ADDRESS} fetches: its next uncached client_id is a 503 page with Retry-After at once, and another address's client is still served`, async () => {
    const A = "127.0.0.3";
    const B = "127.0.0.4";
    const hold = `/hold/r11-${++n}-`;
    const holding = Array.from({ length: CIMD_MAX_IN_FLIGHT_PER_ADDRESS }, (_, i) => authorizeFrom(A, `${base}${hold}${i}.json`));
    await up.arrived(hold, CIMD_MAX_IN_FLIGHT_PER_ADDRESS);
    // A's slots are full (its fetches are held until release): a new document is refused without a fetch
    const refusedPath = `/gone/r11-${++n}.json`;
    const busy = await authorizeFrom(A, base + refusedPath);
    expect(busy.status).toBe(503);
    expect(busy.headers["content-type"]).toStartWith("text/html");
    expect(busy.headers["retry-after"]).toBe(String(CIMD_RETRY_AFTER_SECONDS));
    expect(busy.text).toContain("for your address");
    expect(up.exchanges.some((e) => e.path === refusedPath)).toBe(false);
    // B is not shut out by A: its uncached document is fetched and its consent page shown
    const other = await authorizeFrom(B, `${base}/doc/r11-${++n}.json`);
    expect(other.status).toBe(200);
    expect(other.text).toContain("Authorize Doc Client");
    up.release();
    for (const r of await Promise.all(holding)) expect(r.status).toBe(400);
    // the refused id was neither fetched nor cached as unknown: asked again with a slot free, it is fetched now
    const again = await authorizeFrom(A, base + refusedPath);
    expect(again.status).toBe(400);
    expect(up.exchanges.filter((e) => e.path === refusedPath).length).toBe(1);
  }, 30_000);

  test("the token and revocation endpoints answer a full address with 503 temporarily_unavailable in the OAuth error shape, with Retry-After", async () => {
    const A = "127.0.0.5";
    const hold = `/hold/r12-${++n}-`;
    const holding = Array.from({ length: CIMD_MAX_IN_FLIGHT_PER_ADDRESS }, (_, i) => refreshFrom(A, `${base}${hold}${i}.json`));
    await up.arrived(hold, CIMD_MAX_IN_FLIGHT_PER_ADDRESS);
    for (const endpoint of ["token", "revoke"] as const) {
      const r = await refreshFrom(A, `${base}/gone/r12-${++n}.json`, endpoint);
      expect(r.status).toBe(503);
      expect(r.headers["retry-after"]).toBe(String(CIMD_RETRY_AFTER_SECONDS));
      expect(r.headers["cache-control"]).toBe("no-store");
      const body = JSON.parse(r.text);
      expect(body).toMatchObject({ success: false, error: "temporarily_unavailable", code: "temporarily_unavailable" });
      expect(body.error_description).toContain("retry in a few seconds");
    }
    up.release();
    for (const r of await Promise.all(holding)) expect(r.status).toBe(401);
  }, 30_000);

  test(`past ${CIMD_MAX_IN_FLIGHT} fetches in flight in all, a new address is refused too, and the upstream never sees more`, async () => {
    up.resetMaxOpen();
    const hold = `/hold/r13-${++n}-`;
    const addresses = Array.from({ length: CIMD_MAX_IN_FLIGHT / CIMD_MAX_IN_FLIGHT_PER_ADDRESS }, (_, i) => `127.0.1.${i + 1}`);
    const holding = addresses.flatMap((from, i) => Array.from({ length: CIMD_MAX_IN_FLIGHT_PER_ADDRESS }, (_, j) => refreshFrom(from, `${base}${hold}${i}-${j}.json`)));
    await up.arrived(hold, CIMD_MAX_IN_FLIGHT);
    const busy = await refreshFrom("127.0.2.1", `${base}/gone/r13-${++n}.json`);
    expect(busy.status).toBe(503);
    expect(JSON.parse(busy.text)).toMatchObject({ error: "temporarily_unavailable" });
    expect(JSON.parse(busy.text).error_description).toContain(`at most ${CIMD_MAX_IN_FLIGHT})`);
    up.release();
    for (const r of await Promise.all(holding)) expect(r.status).toBe(401);
    expect(up.maxOpen).toBeLessThanOrEqual(CIMD_MAX_IN_FLIGHT);
  }, 60_000);

  test("concurrent requests for one client_id share one fetch: more than an address's share of them, from several addresses, none refused", async () => {
    const path = `/hold/r14-${++n}.json`;
    const askers = ["127.0.0.6", "127.0.0.6", "127.0.0.6", "127.0.0.6", "127.0.0.7", "127.0.0.7"];
    const asked = askers.map((from) => refreshFrom(from, base + path));
    await up.arrived(path, 1);
    await Bun.sleep(200); // the others have arrived at the gateway by now, and joined
    up.release();
    const answers = await Promise.all(asked);
    expect(answers.map((r) => r.status)).toEqual(askers.map(() => 401));
    expect(up.exchanges.filter((e) => e.path === path).length).toBe(1);
  }, 30_000);

  test(`one deadline of ${CIMD_DEADLINE_MS} ms covers the whole fetch: a host name that never resolves and a trickling body both free their slot at it`, async () => {
    const A = "127.0.0.8";
    // a resolver that never answers for *.stuck.test (the system's for anything else)
    srv.running.services.extras.set(EXTRAS_CIMD_RESOLVER, (host: string) =>
      host.endsWith(".stuck.test") ? new Promise(() => {}) : Promise.resolve([{ address: "127.0.0.1", family: 4 }]),
    );
    try {
      const port = new URL(base).port;
      const ids = [`http://a${++n}.stuck.test:${port}/doc.json`, `${base}/trickle/r15-${++n}.json`];
      const answers = await Promise.all(ids.map((id) => authorizeFrom(A, id)));
      for (const r of answers) {
        expect(r.status).toBe(400);
        expect(r.text).toContain("Unknown client.");
        expect(r.ms).toBeGreaterThanOrEqual(CIMD_DEADLINE_MS - 100);
        expect(r.ms).toBeLessThan(CIMD_DEADLINE_MS + 2_500);
      }
      // both of A's slots are free again: a new document of A's is fetched, not refused
      const next = await authorizeFrom(A, `${base}/doc/r15-${++n}.json`);
      expect(next.status).toBe(200);
      expect((await closedExchange(new URL(ids[1]!).pathname)).closed).toBe(true);
    } finally {
      srv.running.services.extras.delete(EXTRAS_CIMD_RESOLVER);
    }
  }, 30_000);

  test("a known document past its TTL is served stale while its host fails or the slots are full, up to the stale window; a refusal by the host ends it", async () => {
    const A = "127.0.0.9";
    const path = `/doc/r16-${++n}.json`;
    const id = base + path;
    expect((await refreshFrom(A, id)).status).toBe(400); // known: invalid_grant
    const fetches = () => up.exchanges.filter((e) => e.path === path).length;
    expect(fetches()).toBe(1);
    up.override.set(path, 503);
    try {
      // past the TTL, the refetch gets a 503: the document fetched before still answers
      const pastTtl = await later(CIMD_TTL_MS + 1_000, () => refreshFrom(A, id));
      expect(pastTtl.status).toBe(400);
      expect(JSON.parse(pastTtl.text)).toMatchObject({ error: "invalid_grant" });
      expect(fetches()).toBe(2);
      // ... and while an attacker fills this address's slots (a refetch cannot even start), from the consent page too
      const hold = `/hold/r16-${++n}-`;
      const holding = Array.from({ length: CIMD_MAX_IN_FLIGHT_PER_ADDRESS }, (_, i) => authorizeFrom(A, `${base}${hold}${i}.json`));
      await up.arrived(hold, CIMD_MAX_IN_FLIGHT_PER_ADDRESS);
      const underAttack = await later(CIMD_TTL_MS + 60_000, () => authorizeFrom(A, id));
      expect(underAttack.status).toBe(200);
      expect(underAttack.text).toContain("Authorize Doc Client");
      up.release();
      await Promise.all(holding);
      // past the stale window it is no longer served
      const tooLate = await later(CIMD_TTL_MS + CIMD_STALE_MS + 1_000, () => refreshFrom(A, id));
      expect(tooLate.status).toBe(401);
    } finally {
      up.override.delete(path);
    }
    // a definite answer from the host (a 404: the document is gone) is not a failure to ride out: unknown at once
    const goneId = `${base}/doc/r16-${++n}.json`;
    expect((await refreshFrom(A, goneId)).status).toBe(400);
    up.override.set(new URL(goneId).pathname, 404);
    expect((await later(CIMD_TTL_MS + 1_000, () => refreshFrom(A, goneId))).status).toBe(401);
  }, 60_000);
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

  test("an answer that does not decode as its Content-Encoding says is UPSTREAM_RESPONSE_INVALID (undecodable), not a retryable outage", async () => {
    const r = await withEndpoint(`${base}/badgz/stock-${++n}`, check);
    expect(r.body.result.structuredContent.error).toMatchObject({
      code: "UPSTREAM_RESPONSE_INVALID",
      retryable: false,
      details: { reason: "undecodable", encoding_error: "ZlibError" },
    });
  });
});
