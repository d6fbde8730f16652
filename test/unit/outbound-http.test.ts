/**
 * The bounded reader of outside servers' answers (infra/outbound-http.ts, security audit C-1): a body is refused
 * past its byte cap without being read whole, and text is decoded from bytes (the cap counts bytes, not characters).
 */
import { describe, expect, test } from "bun:test";
import { describeThrown } from "../../infra/describe-thrown.ts";
import { readBoundedBytes, readBoundedJson, readBoundedText, ResponseTooLargeError } from "../../infra/outbound-http.ts";

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
