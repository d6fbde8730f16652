/**
 * A name with several vetted addresses (a dual-stack host, several A records): the guard returns all of them in the
 * order to try (RFC 8305 §4, families alternating), and fetchVetted moves to the next address only while no
 * connection was ever established (refused, unreachable, a connect past its share of the deadline), never after one
 * opened (a reset after the request was written): a POST (a /settle, a webhook) is never sent twice. The deadline
 * covers every attempt. Two loopback addresses stand for the host's two addresses: 127.0.0.1 and 127.0.0.2 on the
 * URL's one port.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import {
  ANSWERED_TTL_MS,
  CONNECT_ATTEMPT_MAX_MS,
  ConnectTimeoutError,
  fetchVetted,
  fetchVettedWith,
  neverConnected,
  tcpConnectProbe,
  type ConnectProbe,
} from "../../infra/outbound-http.ts";
import { assertPublicUrl, interleaveFamilies, type ResolvedAddress } from "../../infra/ssrf.ts";
import { provesNotSent } from "../../infra/x402/facilitator-client.ts";

const resolver = (answers: ResolvedAddress[]) => async () => answers;
const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

describe("the guard's addresses", () => {
  test("every address is returned, the resolver's first first, then the families alternating", async () => {
    const v = await assertPublicUrl("https://shop.example.com/", {
      resolve: resolver([v6("2606:4700::1"), v6("2606:4700::2"), v6("2606:4700::3"), v4("93.184.216.34"), v4("93.184.216.35")]),
    });
    expect(v.address).toBe("2606:4700::1");
    expect(v.family).toBe(6);
    expect(v.addresses).toEqual(["2606:4700::1", "93.184.216.34", "2606:4700::2", "93.184.216.35", "2606:4700::3"]);
  });

  test("a name answering IPv4 first keeps IPv4 first", async () => {
    const v = await assertPublicUrl("https://shop.example.com/", { resolve: resolver([v4("93.184.216.34"), v6("2606:4700::1"), v4("93.184.216.35")]) });
    expect(v.address).toBe("93.184.216.34");
    expect(v.addresses).toEqual(["93.184.216.34", "2606:4700::1", "93.184.216.35"]);
  });

  test("the same address answered twice is tried once", () => {
    expect(interleaveFamilies(["93.184.216.34", "93.184.216.34", "2606:4700::1"])).toEqual(["93.184.216.34", "2606:4700::1"]);
  });

  test("one private address among public ones still refuses the whole name, so a fallback can never reach it", async () => {
    const err = await assertPublicUrl("https://shop.example.com/", { resolve: resolver([v4("93.184.216.34"), v6("2606:4700::1"), v4("10.0.0.7")]) }).catch((e) => e);
    expect(err.code).toBe("validation_error");
    expect(err.details).toMatchObject({ reason: "non_public_address", addressClass: "private" });
  });

  test("an IP literal is its one address", async () => {
    const v = await assertPublicUrl("https://[2606:4700::1]/", {});
    expect(v.addresses).toEqual(["2606:4700::1"]);
  });
});

describe("which failures prove nothing was sent", () => {
  const withCode = (code: string) => Object.assign(new TypeError(`${code}: Unable to connect`), { code });
  test("a refused connection or no route means the connection never opened", () => {
    for (const code of ["ECONNREFUSED", "ConnectionRefused", "FailedToOpenSocket", "EHOSTUNREACH", "ENETUNREACH"]) expect(neverConnected(withCode(code))).toBe(true);
  });

  test("a reset, a closed socket, a deadline or an abort may come after the request was read", () => {
    for (const code of ["ECONNRESET", "ConnectionClosed", "ETIMEDOUT", "EPIPE"]) expect(neverConnected(withCode(code))).toBe(false);
    expect(neverConnected(new DOMException("The operation timed out.", "TimeoutError"))).toBe(false);
    expect(neverConnected(new DOMException("aborted", "AbortError"))).toBe(false);
  });

  test("a TLS refusal is not a connection that never opened, though the facilitator client still counts it as not sent", () => {
    expect(neverConnected(withCode("ERR_TLS_CERT_ALTNAME_INVALID"))).toBe(false);
    expect(provesNotSent(withCode("ERR_TLS_CERT_ALTNAME_INVALID"))).toBe(true);
    expect(provesNotSent(withCode("EHOSTUNREACH"))).toBe(true);
    expect(provesNotSent(withCode("ECONNRESET"))).toBe(false);
  });
});

// ----------------------------------------------------------------------------- two addresses, one port

/** The other address's server on 127.0.0.2, and the port both addresses are asked on. */
let seenOnSecond: string[] = [];
let secondAnswer: () => Response | Promise<Response> = () => new Response("second");
const second = Bun.serve({
  hostname: "127.0.0.2",
  port: 0,
  async fetch(req) {
    seenOnSecond.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
    return secondAnswer();
  },
});
const PORT = second.port!;

/** A raw server on 127.0.0.1:PORT that reads the request and resets the connection (after the request was sent). */
let resetter: TCPSocketListener<undefined> | undefined;
let requestsReset = 0;
function startResetter(): void {
  resetter = Bun.listen({
    hostname: "127.0.0.1",
    port: PORT,
    socket: {
      data(socket: Socket<undefined>) {
        requestsReset++;
        socket.terminate();
      },
    },
  });
}

afterAll(() => {
  resetter?.stop(true);
  second.stop(true);
});

const vettedTwo = () =>
  assertPublicUrl(`http://dual.example.test:${PORT}/settle`, { allowPrivate: true, resolve: resolver([v4("127.0.0.1"), v4("127.0.0.2")]) });

describe("fetchVetted over two addresses", () => {
  test("the first address refusing connections, the second answers", async () => {
    seenOnSecond = [];
    secondAnswer = () => new Response("second");
    const res = await fetchVetted(await vettedTwo(), { method: "POST", body: "pay", timeoutMs: 3_000 });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("second");
    expect(seenOnSecond).toEqual(["POST /settle pay"]);
  });

  test("the request carries the URL's host name, not the address it went to", async () => {
    let host = null as string | null;
    secondAnswer = () => new Response("ok");
    const s = Bun.serve({ hostname: "127.0.0.2", port: 0, fetch: (req) => ((host = req.headers.get("host")), new Response("ok")) });
    try {
      const v = await assertPublicUrl(`http://dual.example.test:${s.port!}/x`, { allowPrivate: true, resolve: resolver([v4("127.0.0.1"), v4("127.0.0.2")]) });
      expect((await fetchVetted(v, { timeoutMs: 3_000 })).status).toBe(200);
      expect(host).toBe(`dual.example.test:${s.port}`);
    } finally {
      s.stop(true);
    }
  });

  test("every address refusing ends in the last refusal, which proves nothing was sent", async () => {
    const v = await assertPublicUrl(`http://dual.example.test:${PORT}/`, { allowPrivate: true, resolve: resolver([v4("127.0.0.1"), v4("127.0.0.3")]) });
    const err = await fetchVetted(v, { method: "POST", body: "x", timeoutMs: 3_000 }).catch((e) => e);
    expect(neverConnected(err)).toBe(true);
    expect(provesNotSent(err)).toBe(true);
  });

  test("a connection reset after the request was sent is not retried on the second address", async () => {
    seenOnSecond = [];
    requestsReset = 0;
    startResetter();
    try {
      const err = await fetchVetted(await vettedTwo(), { method: "POST", body: "pay", timeoutMs: 3_000 }).catch((e) => e);
      expect(err).toBeInstanceOf(Error);
      expect(neverConnected(err)).toBe(false);
      expect(provesNotSent(err)).toBe(false);
      expect(requestsReset).toBe(1);
      expect(seenOnSecond).toEqual([]);
    } finally {
      resetter?.stop(true);
      resetter = undefined;
    }
  });

  test("a black-holed first address gets only its share of the deadline, and the second still answers", async () => {
    seenOnSecond = [];
    secondAnswer = () => new Response("second");
    const shares: [string, number][] = [];
    // 127.0.0.1 never completes a connect: the probe waits its whole share, as for a dropped SYN
    const probe: ConnectProbe = async (address, port, ms, signal) => {
      shares.push([address, ms]);
      if (address === "127.0.0.1") {
        await Bun.sleep(ms);
        throw new ConnectTimeoutError(address, ms);
      }
      return tcpConnectProbe(address, port, ms, signal);
    };
    const started = performance.now();
    const res = await fetchVettedWith(await vettedTwo(), { method: "POST", body: "pay", timeoutMs: 1_000 }, probe);
    expect(res.status).toBe(200);
    expect(seenOnSecond).toEqual(["POST /settle pay"]);
    // two addresses left of 1 000 ms: about 500 for the first; the last is fetched without a probe
    expect(shares.length).toBe(1);
    expect(shares[0]![0]).toBe("127.0.0.1");
    expect(shares[0]![1]).toBeGreaterThan(400);
    expect(shares[0]![1]).toBeLessThanOrEqual(500);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("no address's connect share is longer than CONNECT_ATTEMPT_MAX_MS", async () => {
    const shares: number[] = [];
    const probe: ConnectProbe = async (address, _port, ms) => {
      shares.push(ms);
      throw new ConnectTimeoutError(address, ms);
    };
    secondAnswer = () => new Response("second");
    const res = await fetchVettedWith(await vettedTwo(), { timeoutMs: 60_000 }, probe);
    expect(res.status).toBe(200);
    expect(shares).toEqual([CONNECT_ATTEMPT_MAX_MS]);
  });

  test("the deadline covers every attempt: a black-holed first and a silent second end at the deadline, not later", async () => {
    secondAnswer = () => new Promise<Response>(() => {});
    const probe: ConnectProbe = async (address, _port, ms) => {
      await Bun.sleep(ms);
      throw new ConnectTimeoutError(address, ms);
    };
    const started = performance.now();
    const err = await fetchVettedWith(await vettedTwo(), { timeoutMs: 800 }, probe).catch((e) => e);
    const took = performance.now() - started;
    expect((err as Error).name).toBe("TimeoutError");
    expect(took).toBeGreaterThan(700);
    expect(took).toBeLessThan(1_500);
    secondAnswer = () => new Response("second");
  });

  test("the caller's abort stops the attempts at once", async () => {
    const controller = new AbortController();
    const probe: ConnectProbe = (_a, _p, _ms, signal) =>
      new Promise((_, reject) => {
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        setTimeout(() => controller.abort(), 20);
      });
    const err = await fetchVettedWith(await vettedTwo(), { timeoutMs: 5_000, controller }, probe).catch((e) => e);
    expect((err as Error).name).toBe("AbortError");
  });
});

describe("an address that answered lately", () => {
  test("is fetched again without the connect probe within ANSWERED_TTL_MS (one handshake a call, not two)", async () => {
    secondAnswer = () => new Response("second");
    // the serving address first (127.0.0.2), the refusing one second
    const vetted = await assertPublicUrl(`http://dual.example.test:${PORT}/settle`, { allowPrivate: true, resolve: resolver([v4("127.0.0.2"), v4("127.0.0.1")]) });
    const probed: string[] = [];
    const probe: ConnectProbe = (address, port, ms, signal) => {
      probed.push(address);
      return tcpConnectProbe(address, port, ms, signal);
    };
    expect(ANSWERED_TTL_MS).toBe(60_000);
    expect((await fetchVettedWith(vetted, { timeoutMs: 3_000 }, probe)).status).toBe(200);
    expect(probed).toEqual(["127.0.0.2"]);
    // answered a moment ago: no handshake of its own before the request
    expect((await fetchVettedWith(vetted, { timeoutMs: 3_000 }, probe)).status).toBe(200);
    expect((await fetchVettedWith(vetted, { timeoutMs: 3_000 }, probe)).status).toBe(200);
    expect(probed).toEqual(["127.0.0.2"]);
  });
});

describe("the TCP connect probe", () => {
  test("resolves when the address accepts a connection", async () => {
    await tcpConnectProbe("127.0.0.2", PORT, 1_000, new AbortController().signal);
  });

  test("rejects at once when the address refuses", async () => {
    const started = performance.now();
    const err = await tcpConnectProbe("127.0.0.3", PORT, 1_000, new AbortController().signal).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(performance.now() - started).toBeLessThan(900);
  });
});

describe("webhook delivery over two addresses", () => {
  const attempt = async (url: string) => {
    const { attemptDelivery } = await import("../../actors/webhook/deliver.ts");
    return attemptDelivery({
      url,
      eventId: crypto.randomUUID(),
      eventKind: "order.created",
      body: '{"n":1}',
      attempt: 1,
      secrets: ["whsec_x"],
      timestampSec: 1,
      allowPrivate: true,
      timeoutMs: 3_000,
      resolve: resolver([v4("127.0.0.1"), v4("127.0.0.2")]),
    });
  };

  test("the first address refusing connections, the delivery reaches the second", async () => {
    seenOnSecond = [];
    secondAnswer = () => new Response(null, { status: 204 });
    const r = await attempt(`http://hooks.dual.test:${PORT}/hooks`);
    expect(r).toMatchObject({ delivered: true, statusCode: 204, error: null });
    expect(seenOnSecond).toEqual(['POST /hooks {"n":1}']);
  });

  test("a delivery reset after it was sent is a failed attempt, not sent to the second address", async () => {
    seenOnSecond = [];
    requestsReset = 0;
    startResetter();
    try {
      const r = await attempt(`http://hooks.dual.test:${PORT}/hooks`);
      expect(r.delivered).toBe(false);
      expect(r.statusCode).toBe(null);
      expect(requestsReset).toBe(1);
      expect(seenOnSecond).toEqual([]);
    } finally {
      resetter?.stop(true);
      resetter = undefined;
    }
  });
});
