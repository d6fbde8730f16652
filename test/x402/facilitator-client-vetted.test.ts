/**
 * The facilitator client's requests and answers (infra/x402/facilitator-client.ts, audit B-3, session 17): it posts
 * the library's own bodies, but through the SSRF guard and fetchVetted (the vetted address, never a redirect, a
 * bounded body), and no facilitator text reaches the error an agent is given (a code, the status, our own reason; the
 * text goes to a debug line, cut to 300 characters).
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { HTTPFacilitatorClient } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { ActorError } from "../../actors/runtime/errors.ts";
import type { LogFields, Logger } from "../../infra/log.ts";
import type { Resolver } from "../../infra/ssrf.ts";
import { createFacilitatorClient, FACILITATOR_MAX_RESPONSE_BYTES, FACILITATOR_TEXT_LOG_CHARS } from "../../infra/x402/facilitator-client.ts";

const SECRET = "IMDS-ROLE-CREDENTIAL-0123456789";

interface Seen {
  method: string;
  path: string;
  host: string | null;
  contentType: string | null;
  body: string;
}

/** What the stand-in facilitator answers, by path; every request is recorded. */
let answer: (path: string) => Response | Promise<Response> = () => Response.json({ isValid: true, payer: "0xabc" });
let seen: Seen[] = [];
const facilitator = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const url = new URL(req.url);
    seen.push({ method: req.method, path: url.pathname, host: req.headers.get("host"), contentType: req.headers.get("content-type"), body: await req.text() });
    return answer(url.pathname);
  },
});
let metadataHits = 0;
const metadata = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => {
    metadataHits++;
    return Response.json({ AccessKeyId: SECRET });
  },
});
const URL_ = `http://127.0.0.1:${facilitator.port}`;

afterAll(() => {
  facilitator.stop(true);
  metadata.stop(true);
});
beforeEach(() => {
  seen = [];
  metadataHits = 0;
  answer = () => Response.json({ isValid: true, payer: "0xabc" });
});

/** A payload with a bigint (the library writes it as a decimal string) and requirements as the rail sends them. */
const payload = {
  x402Version: 2,
  accepted: { scheme: "exact", network: "eip155:84532" },
  payload: { signature: "0x01", authorization: { from: "0xa", to: "0xb", value: 10_000n, validAfter: "0", validBefore: "99", nonce: "0x02" } },
} as unknown as PaymentPayload;
const requirements = {
  scheme: "exact",
  network: "eip155:84532",
  asset: "0xc",
  amount: "10000",
  payTo: "0xb",
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
} as PaymentRequirements;

/** A logger keeping its debug lines. */
function capturingLog(): Logger & { lines: { msg: string; fields?: LogFields }[] } {
  const lines: { msg: string; fields?: LogFields }[] = [];
  const log = {
    lines,
    debug: (msg: string, fields?: LogFields) => void lines.push({ msg, fields }),
    info: () => {},
    warn: () => {},
    error: () => {},
    child: () => log,
  };
  return log;
}

async function thrown(p: Promise<unknown>): Promise<ActorError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ActorError);
  return err as ActorError;
}

describe("requests", () => {
  test("/verify and /settle bodies are byte for byte the library's HTTPFacilitatorClient's (bigints as strings), with its Content-Type", async () => {
    answer = (path) => Response.json(path === "/verify" ? { isValid: true } : { success: true, transaction: "0xt", network: "eip155:84532" });
    const library = new HTTPFacilitatorClient({ url: URL_ });
    await library.verify(payload, requirements);
    await library.settle(payload, requirements);
    const ours = createFacilitatorClient({ url: URL_ });
    await ours.verify(payload, requirements);
    await ours.settle(payload, requirements);
    expect(seen).toHaveLength(4);
    const [lv, ls, ov, os] = seen;
    expect(ov).toEqual(lv!);
    expect(os).toEqual(ls!);
    expect(ov!.body).toContain('"value":"10000"');
    expect(ov).toMatchObject({ method: "POST", path: "/verify", contentType: "application/json" });
  });

  test("the name is resolved once, by the SSRF guard, and the request goes to that address with the URL's Host", async () => {
    let lookups = 0;
    const resolve: Resolver = async () => {
      lookups++;
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const client = createFacilitatorClient({ url: `http://facilitator.test:${facilitator.port}`, resolve, allowPrivate: true });
    expect(await client.verify(payload, requirements)).toMatchObject({ isValid: true, payer: "0xabc" });
    expect(lookups).toBe(1);
    expect(seen[0]!.host).toBe(`facilitator.test:${facilitator.port}`);
  });

  test("without allowPrivate a loopback or private facilitator is refused before anything is sent: 409 STORE_NOT_CONFIGURED facilitator_not_public (settle: not_attempted)", async () => {
    const toLoopback: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];
    for (const options of [
      { url: URL_ },
      { url: `https://facilitator.test:${facilitator.port}`, resolve: toLoopback },
      { url: "https://169.254.169.254" },
    ]) {
      const client = createFacilitatorClient({ ...options, allowPrivate: false });
      const verify = await thrown(client.verify(payload, requirements));
      expect(verify.code).toBe("STORE_NOT_CONFIGURED");
      expect(verify.details).toMatchObject({ reason: "facilitator_not_public", operation: "verify" });
      const settle = await thrown(client.settle(payload, requirements));
      expect(settle.details).toMatchObject({ reason: "facilitator_not_public", operation: "settle", settlement: "not_attempted" });
    }
    // plain http to a public address is refused too (https only, as every outside URL)
    const publicHttp = createFacilitatorClient({ url: "http://facilitator.test", resolve: async () => [{ address: "93.184.216.34", family: 4 }], allowPrivate: false });
    expect((await thrown(publicHttp.verify(payload, requirements))).details).toMatchObject({ reason: "facilitator_not_public" });
    expect(seen).toHaveLength(0);
  });

  test("a name that does not resolve is unreachable, like a refused connection (settle: not_attempted)", async () => {
    const client = createFacilitatorClient({ url: "https://nowhere.test", resolve: async () => Promise.reject(new Error("ENOTFOUND")), allowPrivate: false });
    const err = await thrown(client.settle(payload, requirements));
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toMatchObject({ reason: "unreachable", settlement: "not_attempted" });
  });
});

describe("answers", () => {
  test("a redirect is never followed: 502 UPSTREAM_RESPONSE_INVALID with the status (settle: unknown), the Location to a debug line only", async () => {
    answer = (path) => new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${metadata.port}/latest/meta-data${path}` } });
    const log = capturingLog();
    const client = createFacilitatorClient({ url: URL_, log });
    const verify = await thrown(client.verify(payload, requirements));
    expect(verify.code).toBe("UPSTREAM_RESPONSE_INVALID");
    expect(verify.details).toMatchObject({ operation: "verify", status: 307, reason: "redirect" });
    const settle = await thrown(client.settle(payload, requirements));
    expect(settle.details).toMatchObject({ operation: "settle", status: 307, reason: "redirect", settlement: "unknown" });
    for (const status of [301, 302, 303, 308]) {
      answer = () => new Response(null, { status, headers: { location: `http://127.0.0.1:${metadata.port}/` } });
      expect((await thrown(client.verify(payload, requirements))).details).toMatchObject({ status, reason: "redirect" });
    }
    expect(metadataHits).toBe(0);
    expect(JSON.stringify(log.lines)).toContain("/latest/meta-data/verify");
  });

  test("a 2xx that is not a verify / settle answer: UPSTREAM_RESPONSE_INVALID without the facilitator's text, which goes to a debug line cut to 300 characters", async () => {
    const long = `${SECRET} ${"x".repeat(1_000)}`;
    const log = capturingLog();
    const client = createFacilitatorClient({ url: URL_, log });
    answer = () => Response.json({ AccessKeyId: long });
    const verify = await thrown(client.verify(payload, requirements));
    expect(verify.code).toBe("UPSTREAM_RESPONSE_INVALID");
    expect(verify.details).toMatchObject({ status: 200, reason: "schema" });
    const settle = await thrown(client.settle(payload, requirements));
    expect(settle.details).toMatchObject({ status: 200, reason: "schema", settlement: "unknown" });
    answer = () => new Response(`<html>${long}</html>`, { status: 200 });
    const notJson = await thrown(client.verify(payload, requirements));
    expect(notJson.details).toMatchObject({ status: 200, reason: "invalid_json" });
    for (const err of [verify, settle, notJson]) {
      expect(err.message).not.toContain(SECRET);
      expect(JSON.stringify(err.details)).not.toContain(SECRET);
    }
    expect(log.lines).toHaveLength(3);
    for (const line of log.lines) {
      expect(String(line.fields?.text)).toContain(SECRET);
      expect(String(line.fields?.text).length).toBeLessThanOrEqual(FACILITATOR_TEXT_LOG_CHARS);
    }
  });

  test(`an endless 2xx body is read no further than ${FACILITATOR_MAX_RESPONSE_BYTES} bytes: UPSTREAM_RESPONSE_INVALID too_large`, async () => {
    const chunk = new Uint8Array(16 * 1024).fill(0x78);
    let pulled = 0;
    answer = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(c) {
            pulled++;
            c.enqueue(chunk);
          },
        }),
        { status: 200 },
      );
    const err = await thrown(createFacilitatorClient({ url: URL_ }).verify(payload, requirements));
    expect(err.code).toBe("UPSTREAM_RESPONSE_INVALID");
    expect(err.details).toMatchObject({ status: 200, reason: "too_large" });
    // the connection was closed: the server stops being able to write (its socket buffers aside)
    await Bun.sleep(200);
    const after = pulled;
    await Bun.sleep(300);
    expect(pulled).toBe(after);
  });

  test("a non-2xx carrying a verify / settle body is a refusal, returned; its fields are passed on only when they are strings", async () => {
    const client = createFacilitatorClient({ url: URL_ });
    answer = () => Response.json({ isValid: false, invalidReason: 42, invalidMessage: "balance too low", payer: "0xabc" }, { status: 400 });
    expect(await client.verify(payload, requirements)).toEqual({ isValid: false, invalidReason: undefined, invalidMessage: "balance too low", payer: "0xabc" });
    answer = () => Response.json({ success: false, errorReason: "invalid_exact_evm_signature", transaction: "", network: { x: 1 } }, { status: 402 });
    expect(await client.settle(payload, requirements)).toMatchObject({ success: false, errorReason: "invalid_exact_evm_signature", transaction: "", network: undefined });
  });

  test("a non-2xx without one: 5xx UPSTREAM_ERROR, 4xx UPSTREAM_RESPONSE_INVALID, with the status and never the body's text (settle: unknown)", async () => {
    const client = createFacilitatorClient({ url: URL_ });
    answer = () => new Response(`upstream said ${SECRET}`, { status: 500 });
    const five = await thrown(client.settle(payload, requirements));
    expect(five.code).toBe("UPSTREAM_ERROR");
    expect(five.details).toMatchObject({ status: 500, settlement: "unknown" });
    answer = () => Response.json({ error: SECRET }, { status: 404 });
    const four = await thrown(client.verify(payload, requirements));
    expect(four.code).toBe("UPSTREAM_RESPONSE_INVALID");
    expect(four.details).toMatchObject({ status: 404 });
    for (const err of [five, four]) expect(JSON.stringify({ m: err.message, d: err.details })).not.toContain(SECRET);
  });

  test("the deadline covers the body: headers in time, a body that never ends is a timeout (settle: unknown)", async () => {
    answer = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode('{"success":'));
          },
        }),
        { status: 200, headers: { "content-type": "application/json" } },
      );
    const started = performance.now();
    const err = await thrown(createFacilitatorClient({ url: URL_, timeoutMs: 300 }).settle(payload, requirements));
    expect(performance.now() - started).toBeLessThan(1_200);
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toMatchObject({ reason: "timeout", operation: "settle", settlement: "unknown" });
  });
});
