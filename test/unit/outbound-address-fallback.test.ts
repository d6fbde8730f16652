/**
 * A name with several vetted addresses (a dual-stack host, several A records): the guard returns all of them in the
 * order to try (RFC 8305 §4, families alternating), and fetchVetted races their connects (RFC 8305 §5: the next
 * address's bare connect starts after CONNECT_ATTEMPT_DELAY_MS, or at once when the previous one failed; the first to
 * connect wins, the others are closed) and fetches the winner only. It moves to another address only while no
 * connection for the request was ever established (refused, unreachable, no connect), never after one opened (a
 * reset after the request was written): a POST (a /settle, a webhook) is never sent twice. The deadline covers every
 * attempt. Two loopback addresses stand for the host's two addresses: 127.0.0.1 and 127.0.0.2 on the URL's one port;
 * a black-holed address is a real one (test/helpers/tcp-black-hole.ts: SYNs dropped by the kernel).
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import {
  ANSWERED_TTL_MS,
  CONNECT_ATTEMPT_DELAY_MS,
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
import { listenBesideHold, openTcpBlackHole } from "../helpers/tcp-black-hole.ts";

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
// 127.0.0.1 at PORT is held (refusing) but while a test's own listener stands there
const { server: second, port: PORT, hold: firstHold } = listenBesideHold(() => {
  const server = Bun.serve({
    hostname: "127.0.0.2",
    port: 0,
    async fetch(req) {
      seenOnSecond.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
      return secondAnswer();
    },
  });
  return { server, port: server.port!, stop: () => server.stop(true) };
});

/** A raw server on 127.0.0.1:PORT that reads the request and resets the connection (after the request was sent). */
let resetter: TCPSocketListener<undefined> | undefined;
let requestsReset = 0;
function startResetter(): void {
  firstHold.release();
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
  firstHold.release();
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
    // fetch's own refusal of the last address, as when the attempts were sequential (the probes' errors are not it)
    const direct = await fetch(`http://127.0.0.3:${PORT}/`).catch((e) => e);
    expect(err).toBeInstanceOf(direct.constructor);
    expect(err.code).toBe(direct.code);
    expect(err.message).toBe(direct.message);
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
      firstHold.hold();
    }
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

// ----------------------------------------------------------------------------- connects raced (RFC 8305 §5)

/**
 * A fresh pair on a new port (no address of it answered before, so every one is probed): a counting HTTP server on
 * 127.0.0.2, and on 127.0.0.1 whatever the test puts there (nothing: refused).
 */
/**
 * A server on 127.0.0.2 (port 0: a free one) and, held on 127.0.0.1 at that same port, `first`: refusing connects
 * until a test makes it a black hole or lets it go for a listener of its own (tests run beside other files' sockets).
 */
function freshSecond() {
  const seen: string[] = [];
  const { port, hold: first, server } = listenBesideHold(() => {
    const server = Bun.serve({
      hostname: "127.0.0.2",
      port: 0,
      async fetch(req) {
        seen.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
        return new Response("second");
      },
    });
    return { server, port: server.port!, stop: () => server.stop(true) };
  });
  const vetted = (firstAddress = "127.0.0.1", secondAddress = "127.0.0.2") =>
    assertPublicUrl(`http://race.example.test:${port}/settle`, { allowPrivate: true, resolve: resolver([v4(firstAddress), v4(secondAddress)]) });
  return { seen, port, first, vetted, stop: () => (first.release(), server.stop(true)) };
}

/** Sleeps `ms`, or rejects with the signal's reason as soon as it aborts. */
const abortableSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

describe("connect attempts raced over two addresses", () => {
  test("the attempt delay is RFC 8305's recommended 250 ms, within its 100 ms to 2 s", () => {
    expect(CONNECT_ATTEMPT_DELAY_MS).toBe(250);
    expect(CONNECT_ATTEMPT_MAX_MS).toBe(2_000);
  });

  test("a black-holed first address costs the attempt delay, not its connect deadline: the second answers in well under a second, and the abandoned connect is closed", async () => {
    const pair = freshSecond();
    const hole = await pair.first.blackHole();
    try {
      const started = performance.now();
      const res = await fetchVetted(await pair.vetted(), { method: "POST", body: "pay", timeoutMs: 10_000 });
      const took = performance.now() - started;
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("second");
      expect(pair.seen).toEqual(["POST /settle pay"]);
      // sequentially the first address had min(2 s, 10 s / 2) to connect before the second was tried
      expect(took).toBeGreaterThanOrEqual(CONNECT_ATTEMPT_DELAY_MS - 5);
      expect(took).toBeLessThan(1_000);
      // the black-holed connect, still pending when the second won, was closed then, not left in SYN-SENT
      expect(hole.pendingConnects()).toBe(0);
    } finally {
      hole.close();
      pair.stop();
    }
  });

  test("a first address that connects slowly, but first, gets the one request; the second's attempt, started after the attempt delay, is cancelled and nothing reaches it", async () => {
    const pair = freshSecond();
    const seenFirst: string[] = [];
    pair.first.release();
    const first = Bun.serve({
      hostname: "127.0.0.1",
      port: pair.port,
      async fetch(req) {
        seenFirst.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
        return new Response("first");
      },
    });
    const log: string[] = [];
    let t0 = 0;
    // the first connects after 500 ms (a far or lossy path), the second would take 3 s
    const probe: ConnectProbe = async (address, port, ms, signal) => {
      const at = performance.now() - t0;
      log.push(`start ${address}`);
      try {
        await abortableSleep(address === "127.0.0.1" ? 500 : 3_000, signal);
        await tcpConnectProbe(address, port, ms, signal);
        log.push(`connected ${address}`);
      } catch (err) {
        log.push(`${(err as Error).name} ${address}`);
        throw err;
      }
      if (address === "127.0.0.2") throw new Error(`the second connected (started at ${at} ms)`);
    };
    const starts: number[] = [];
    const timed: ConnectProbe = (address, port, ms, signal) => (starts.push(performance.now() - t0), probe(address, port, ms, signal));
    try {
      t0 = performance.now();
      const res = await fetchVettedWith(await pair.vetted(), { method: "POST", body: "pay", timeoutMs: 10_000 }, timed);
      const took = performance.now() - t0;
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("first");
      expect(seenFirst).toEqual(["POST /settle pay"]);
      expect(pair.seen).toEqual([]);
      expect(log).toEqual(["start 127.0.0.1", "start 127.0.0.2", "connected 127.0.0.1", "AbortError 127.0.0.2"]);
      expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(CONNECT_ATTEMPT_DELAY_MS - 5);
      expect(took).toBeGreaterThanOrEqual(495);
      expect(took).toBeLessThan(2_500);
    } finally {
      first.stop(true);
      pair.stop();
    }
  });

  test("a first address that refuses starts the second at once, without waiting for the attempt delay", async () => {
    const pair = freshSecond();
    const starts: [string, number][] = [];
    const t0 = performance.now();
    const probe: ConnectProbe = (address, port, ms, signal) => {
      starts.push([address, performance.now() - t0]);
      return tcpConnectProbe(address, port, ms, signal);
    };
    try {
      const res = await fetchVettedWith(await pair.vetted(), { method: "POST", body: "pay", timeoutMs: 10_000 }, probe);
      expect(res.status).toBe(200);
      expect(pair.seen).toEqual(["POST /settle pay"]);
      expect(starts.map(([a]) => a)).toEqual(["127.0.0.1", "127.0.0.2"]);
      expect(starts[1]![1]).toBeLessThan(CONNECT_ATTEMPT_DELAY_MS - 50);
    } finally {
      pair.stop();
    }
  });

  test("every address is probed with a connect deadline of at most CONNECT_ATTEMPT_MAX_MS, the last one too; when every probe fails, the last address is still fetched directly, so a connect only the probe missed gets its chance", async () => {
    const pair = freshSecond();
    const shares: [string, number][] = [];
    const probe: ConnectProbe = async (address, _port, ms) => {
      shares.push([address, ms]);
      throw new ConnectTimeoutError(address, ms);
    };
    try {
      const res = await fetchVettedWith(await pair.vetted(), { method: "POST", body: "pay", timeoutMs: 60_000 }, probe);
      expect(res.status).toBe(200);
      expect(shares).toEqual([
        ["127.0.0.1", CONNECT_ATTEMPT_MAX_MS],
        ["127.0.0.2", CONNECT_ATTEMPT_MAX_MS],
      ]);
      expect(pair.seen).toEqual(["POST /settle pay"]);
    } finally {
      pair.stop();
    }
  });

  test("a black-holed first and a refusing second end as before: the second's own refusal (nothing sent), after the first's connect deadline, with no connect left open", async () => {
    const pair = freshSecond();
    const hole = await pair.first.blackHole();
    try {
      const started = performance.now();
      const err = await fetchVetted(await pair.vetted("127.0.0.1", "127.0.0.3"), { method: "POST", body: "pay", timeoutMs: 4_000 }).catch((e) => e);
      const took = performance.now() - started;
      const direct = await fetch(`http://127.0.0.3:${pair.port}/`).catch((e) => e);
      expect(err).toBeInstanceOf(direct.constructor);
      expect(err.code).toBe(direct.code);
      expect(err.message).toBe(direct.message);
      expect(neverConnected(err)).toBe(true);
      expect(provesNotSent(err)).toBe(true);
      // the first's connect deadline (min(2 s, the deadline)), not the whole 4 s deadline
      expect(took).toBeGreaterThanOrEqual(CONNECT_ATTEMPT_MAX_MS - 5);
      expect(took).toBeLessThan(3_500);
      expect(hole.pendingConnects()).toBe(0);
      expect(pair.seen).toEqual([]);
    } finally {
      hole.close();
      pair.stop();
    }
  });

  test("a winner whose fetch is refused (its server went away after the probe) passes to the address not yet tried, fetched directly", async () => {
    const pair = freshSecond();
    const probed: string[] = [];
    // the first "connects" (as if its server went away right after), so the second is never probed
    const probe: ConnectProbe = async (address) => {
      probed.push(address);
    };
    try {
      const res = await fetchVettedWith(await pair.vetted(), { method: "POST", body: "pay", timeoutMs: 10_000 }, probe);
      expect(res.status).toBe(200);
      expect(probed).toEqual(["127.0.0.1"]);
      expect(pair.seen).toEqual(["POST /settle pay"]);
    } finally {
      pair.stop();
    }
  });
  test("a slower address whose probe was cancelled because another connected first is still tried when the winner's fetch is refused", async () => {
    const pair = freshSecond();
    const probed: string[] = [];
    // 127.0.0.2 (the server) connects after 400 ms; 127.0.0.3, started after the attempt delay, "connects" at once
    // (its server went away right after) and wins; 127.0.0.2's pending attempt is cancelled, which is not a failure
    const probe: ConnectProbe = (address, _port, _ms, signal) => {
      probed.push(address);
      return address === "127.0.0.2" ? abortableSleep(400, signal) : Promise.resolve();
    };
    try {
      const res = await fetchVettedWith(await pair.vetted("127.0.0.2", "127.0.0.3"), { method: "POST", body: "pay", timeoutMs: 10_000 }, probe);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("second");
      expect(probed).toEqual(["127.0.0.2", "127.0.0.3"]);
      expect(pair.seen).toEqual(["POST /settle pay"]);
    } finally {
      pair.stop();
    }
  });
});

describe("an address that answered lately", () => {
  test("is fetched again without the connect probe within ANSWERED_TTL_MS (one handshake a call, not two)", async () => {
    // a port of its own: the tests above made 127.0.0.2 on PORT an address that answered lately already
    const pair = freshSecond();
    // the serving address first (127.0.0.2), the refusing one second
    const vetted = await pair.vetted("127.0.0.2", "127.0.0.1");
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
    pair.stop();
  });
});

describe("the TCP connect probe", () => {
  test("resolves when the address accepts a connection", async () => {
    await tcpConnectProbe("127.0.0.2", PORT, 1_000, new AbortController().signal);
  });

  test("a probe that times out closes its connect, which would otherwise stay pending for minutes", async () => {
    const hole = await openTcpBlackHole();
    try {
      const err = await tcpConnectProbe(hole.address, hole.port, 200, new AbortController().signal).catch((e) => e);
      expect(err).toBeInstanceOf(ConnectTimeoutError);
      expect(hole.pendingConnects()).toBe(0);
    } finally {
      hole.close();
    }
  });

  test("a probe aborted while its connect is pending rejects with the abort's reason and closes the connect", async () => {
    const hole = await openTcpBlackHole();
    try {
      const controller = new AbortController();
      const attempt = tcpConnectProbe(hole.address, hole.port, 5_000, controller.signal).catch((e) => e);
      await Bun.sleep(50);
      expect(hole.pendingConnects()).toBe(1);
      controller.abort(new DOMException("another address connected first", "AbortError"));
      const err = await attempt;
      expect((err as Error).name).toBe("AbortError");
      expect(hole.pendingConnects()).toBe(0);
    } finally {
      hole.close();
    }
  });

  test("a probe writes nothing and closes the connection it opened", async () => {
    let opened = 0;
    let closed = 0;
    let bytes = 0;
    const listener = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open: () => void opened++,
        close: () => void closed++,
        data: (_s, d) => void (bytes += d.byteLength),
      },
    });
    try {
      await tcpConnectProbe("127.0.0.1", listener.port, 1_000, new AbortController().signal);
      await tcpConnectProbe("127.0.0.1", listener.port, 1_000, new AbortController().signal);
      for (let i = 0; i < 100 && closed < 2; i++) await Bun.sleep(10);
      expect({ opened, closed, bytes }).toEqual({ opened: 2, closed: 2, bytes: 0 });
    } finally {
      listener.stop(true);
    }
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
      firstHold.hold();
    }
  });
});
