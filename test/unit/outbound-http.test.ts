/**
 * The bounded reader of outside servers' answers (infra/outbound-http.ts, security audit C-1): a body is refused
 * past its byte cap without being read whole, and text is decoded from bytes (the cap counts bytes, not characters).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { constants, createGzip, gzipSync } from "node:zlib";
import { describeThrown } from "../../infra/describe-thrown.ts";
import { fetchVetted, readBoundedBytes, readBoundedJson, readBoundedText, ResponseTooLargeError, ResponseUndecodableError } from "../../infra/outbound-http.ts";
import type { VettedUrl } from "../../infra/ssrf.ts";

const enc = new TextEncoder();

/** A streamed answer made of these chunks, recording how many were pulled and whether it was cancelled. */
function streamed(chunks: Uint8Array[], headers: Record<string, string> = {}) {
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      const next = chunks[seen.pulled++];
      if (next) c.enqueue(next);
      else c.close();
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { res: new Response(body, { headers }), seen };
}

/** An endless answer of `size`-byte chunks. */
function endless(size: number) {
  const chunk = new Uint8Array(size).fill(0x78);
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      seen.pulled++;
      c.enqueue(chunk);
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { res: new Response(body), seen };
}

describe("readBoundedBytes", () => {
  test("a Content-Length over the cap is refused before any byte is read, and the request is aborted", async () => {
    const { res, seen } = streamed([enc.encode("{}")], { "content-length": "1073741824" });
    const controller = new AbortController();
    const err = await readBoundedBytes(res, 1024, controller).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect((err as ResponseTooLargeError).declaredBytes).toBe(1073741824);
    expect((err as ResponseTooLargeError).limitBytes).toBe(1024);
    expect(seen.pulled).toBeLessThanOrEqual(1);
    expect(controller.signal.aborted).toBe(true);
  });

  test("a chunked body without a length is cut off once the count passes the cap: the stream is cancelled", async () => {
    const { res, seen } = endless(1000);
    const controller = new AbortController();
    const err = await readBoundedBytes(res, 16 * 1024, controller).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect((err as ResponseTooLargeError).declaredBytes).toBeUndefined();
    // 17 chunks pass 16 KiB; the stream may pull one or two ahead, never much more
    expect(seen.pulled).toBeLessThanOrEqual(20);
    expect(seen.cancelled).toBe(true);
    expect(controller.signal.aborted).toBe(true);
  });

  test("a Content-Length that lies low does not help: the bytes are counted", async () => {
    const { res } = streamed([new Uint8Array(600), new Uint8Array(600)], { "content-length": "10" });
    await expect(readBoundedBytes(res, 1000)).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  test("a body of exactly the cap is read whole, across chunks", async () => {
    const { res, seen } = streamed([new Uint8Array(400).fill(1), new Uint8Array(600).fill(2)], { "content-length": "1000" });
    const bytes = await readBoundedBytes(res, 1000);
    expect(bytes.byteLength).toBe(1000);
    expect(bytes[399]).toBe(1);
    expect(bytes[400]).toBe(2);
    expect(seen.cancelled).toBe(false);
  });

  test("one byte over the cap is refused", async () => {
    const { res } = streamed([new Uint8Array(400), new Uint8Array(601)]);
    await expect(readBoundedBytes(res, 1000)).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  test("an empty body is zero bytes", async () => {
    expect((await readBoundedBytes(new Response(null), 10)).byteLength).toBe(0);
  });
});

describe("readBoundedText and readBoundedJson", () => {
  test("a multi-byte character split across two chunks decodes whole", async () => {
    const euro = enc.encode("€"); // e2 82 ac
    const { res } = streamed([Uint8Array.of(0x61, euro[0]!), Uint8Array.of(euro[1]!, euro[2]!, 0x62)]);
    expect(await readBoundedText(res, 5)).toBe("a€b");
  });

  test("text ending in a multi-byte character exactly at the cap is accepted", async () => {
    const text = "x".repeat(13) + "€"; // 13 + 3 = 16 bytes
    const { res } = streamed([enc.encode(text).slice(0, 14), enc.encode(text).slice(14)]);
    expect(await readBoundedText(res, 16)).toBe(text);
  });

  test("the cap counts bytes, not characters: 6 three-byte characters exceed a 16-byte cap", async () => {
    const { res } = streamed([enc.encode("€€€€€€")]); // 6 UTF-16 units, 18 bytes
    await expect(readBoundedText(res, 16)).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  test("a leading BOM is dropped, as Response.text() does", async () => {
    const { res } = streamed([Uint8Array.of(0xef, 0xbb, 0xbf), enc.encode('{"in_stock":true}')]);
    expect(await readBoundedJson(res, 100)).toEqual({ in_stock: true });
  });

  test("a body that is not JSON is a SyntaxError", async () => {
    const { res } = streamed([enc.encode("not json")]);
    await expect(readBoundedJson(res, 100)).rejects.toBeInstanceOf(SyntaxError);
  });
});

/**
 * Answers from a real socket, through Bun's fetch (which decompresses): each records the bytes it put on the wire
 * and whether the connection closed.
 *  - `/gzip-endless`: a gzip stream of zeros that never ends (chunked);
 *  - `/gzip-bomb`: 1 MiB of gzip, sent in one write, that inflates to 1 GiB;
 *  - `/bad-gzip`, `/bad-br`: a plain body labelled gzip or br;
 *  - `/trickle`: a chunked body of one byte every 50 ms, forever.
 */
const wire: Record<string, { written: number; closed: boolean }> = {};
let upstream: Server;
let port = 0;
/** 1 MiB of gzip that inflates to 1 GiB: 16 members of 64 MiB of zeros each (Bun inflates every member). */
const BOMB = Buffer.concat(Array<Buffer>(16).fill(gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 })));

beforeAll(async () => {
  upstream = createServer((sock: Socket) => {
    sock.on("error", () => {});
    sock.once("data", (data) => {
      const path = /^[A-Z]+ (\S+)/.exec(data.toString("latin1"))?.[1] ?? "/";
      const rec: { written: number; closed: boolean } = { written: 0, closed: false };
      wire[path] = rec;
      sock.on("close", () => {
        rec.closed = true;
      });
      const send = (b: Buffer | string) => {
        rec.written += Buffer.byteLength(b);
        return sock.write(b);
      };
      const chunked = (b: Buffer) => send(Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from("\r\n")]));
      if (path === "/gzip-endless") {
        send("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n");
        const gzip = createGzip({ flush: constants.Z_SYNC_FLUSH });
        gzip.on("data", (b: Buffer) => {
          if (sock.destroyed || chunked(b)) return;
          gzip.pause();
          sock.once("drain", () => gzip.resume());
        });
        const zeros = Buffer.alloc(1024 * 1024);
        const feed = () => {
          while (!sock.destroyed) if (!gzip.write(zeros)) return void gzip.once("drain", feed);
          gzip.destroy();
        };
        feed();
      } else if (path === "/gzip-bomb") {
        send(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: ${BOMB.length}\r\n\r\n`);
        send(BOMB);
      } else if (path === "/bad-gzip" || path === "/bad-br") {
        const body = '{"in_stock":true} labelled compressed, sent plain';
        send(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: ${path === "/bad-gzip" ? "gzip" : "br"}\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      } else if (path === "/trickle") {
        send("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n");
        const timer = setInterval(() => (sock.destroyed ? clearInterval(timer) : chunked(Buffer.from(" "))), 50);
      } else {
        sock.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
      }
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  port = (upstream.address() as { port: number }).port;
});
afterAll(() => upstream?.close());

function local(path: string): VettedUrl {
  return { url: new URL(`http://127.0.0.1:${port}${path}`), hostname: "127.0.0.1", address: "127.0.0.1", family: 4, addresses: ["127.0.0.1"], port };
}

async function closed(path: string): Promise<{ written: number }> {
  for (let i = 0; i < 250 && !wire[path]?.closed; i++) await Bun.sleep(20);
  expect(wire[path]?.closed).toBe(true);
  return wire[path]!;
}

describe("bodies read from a real server", () => {
  test("the cap counts decoded bytes: an endless gzip stream of zeros is stopped past 16 KiB decoded, a few KiB into the wire", async () => {
    const controller = new AbortController();
    const res = await fetchVetted(local("/gzip-endless"), { timeoutMs: 10_000, controller });
    const err = await readBoundedBytes(res, 16 * 1024, controller).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    // Bun inflates as the bytes come (at most 256 KiB decoded a chunk); one that inflated the whole body first would
    // never get there (the stream has no end) and would time out instead. The server keeps writing until the abort
    // reaches its socket: under 1 MiB on a quiet machine (the earlier bound), 1.7 MiB on a loaded one (session 17); an
    // unbounded read would have it write for the whole 10 s deadline, hundreds of MiB
    expect((await closed("/gzip-endless")).written).toBeLessThan(16 * 1024 * 1024);
  });

  test("a 1 MiB gzip bomb (1 GiB inflated) is refused without inflating it whole", async () => {
    const before = process.memoryUsage().rss;
    const controller = new AbortController();
    const res = await fetchVetted(local("/gzip-bomb"), { timeoutMs: 10_000, controller });
    await expect(readBoundedBytes(res, 16 * 1024, controller)).rejects.toBeInstanceOf(ResponseTooLargeError);
    // inflated whole it would be 1 GiB; read through the cap it is a few chunks
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
  });

  test("a body that does not decode as its Content-Encoding says is ResponseUndecodableError, naming the decoder's error", async () => {
    for (const [path, code] of [["/bad-gzip", "ZlibError"], ["/bad-br", "BrotliDecompressionError"]] as const) {
      const controller = new AbortController();
      const err = await fetchVetted(local(path), { timeoutMs: 5_000, controller })
        .then((res) => readBoundedBytes(res, 4096, controller))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ResponseUndecodableError);
      expect((err as ResponseUndecodableError).encodingError).toBe(code);
    }
  });

  test("the deadline covers the body: a body trickling one byte every 50 ms fails at timeoutMs with a TimeoutError", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const res = await fetchVetted(local("/trickle"), { timeoutMs: 800, controller });
    const err = await readBoundedBytes(res, 16 * 1024, controller).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect((err as Error).name).toBe("TimeoutError");
    expect(elapsed).toBeGreaterThanOrEqual(750);
    expect(elapsed).toBeLessThan(5_000);
    await closed("/trickle");
  });
});

describe("describeThrown (the start-up failure line)", () => {
  test("undefined is printed as undefined, not a crash of the handler", () => {
    expect(describeThrown(undefined)).toBe("undefined");
  });

  test("an Error is its name and message, with its causes", () => {
    expect(describeThrown(new Error("outer", { cause: new TypeError("inner") }))).toBe("Error: outer\n  caused by TypeError: inner");
  });

  test("a string or a plain object is shown as it is", () => {
    expect(describeThrown("boom")).toBe("'boom'");
    expect(describeThrown({ code: "EADDRINUSE", port: 5432 })).toBe("{ code: 'EADDRINUSE', port: 5432 }");
  });
});
