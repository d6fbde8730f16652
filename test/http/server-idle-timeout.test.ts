/**
 * The HTTP server's idle timeout (review R4-7). Bun closes a connection that sent or received nothing for
 * `idleTimeout` seconds, and in Bun 1.4.5 that includes a request without a body whose answer is still pending (a
 * request with a body is not cut). Elysia's `listen` default is 30 s, below the x402 checkout's cart ask (35 s) and
 * a catalog ingest's (60 s). The gateway sets it explicitly (gateway/boot.ts SERVER_IDLE_TIMEOUT_S, 120 s): the
 * first test checks that value against the deadlines; the others boot the gateway with a short idle timeout
 * (BootOptions.idleTimeoutS, 8 s) so a request cut by it shows the value boot passes is the one Bun applies, not
 * Elysia's default, without waiting out 30 s (the wait was 36 s before).
 *
 * Bun checks idle time in sweeps every ~4 s: measured on this gateway, a pending request with a 4 s timeout was cut
 * anywhere between 1.0 and 4.0 s after it was sent (the 2 s request below was once reset after 0.6 s). So the timeout
 * is 8 s: nothing is cut before ~4 s, everything pending by ~8 s. Each request goes on a connection of its own
 * (`keepalive: false`): on one taken from fetch's keep-alive pool the idle clock is not the request's (a 20 s request
 * on a reused connection was cut after 14 s at 8 s), and another test file of this process may have left one.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { x402AskTimeoutMs, x402Timeouts } from "../../actors/payments/x402-rail.ts";
import { SERVER_IDLE_TIMEOUT_S } from "../../gateway/boot.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
const IDLE_S = 8;
/** Bun's idle sweep: a timeout of n seconds fires between n − 4 and n seconds after the last activity. */
const SWEEP_MS = 4_000;

/** A body-less request that waits, as a GET or an empty POST waiting on a long actor ask does. */
const slow = () =>
  new Elysia({ name: "test-slow" }).get("/api/v1/test/slow", async ({ query }) => {
    const ms = Number(query.ms);
    await Bun.sleep(ms);
    return new Response(`answered after ${ms} ms`);
  });

beforeAll(async () => {
  srv = await startServer({ seed: false, boot: { extraModules: [slow], idleTimeoutS: IDLE_S } });
}, 60_000);

afterAll(async () => {
  await srv?.stop();
});

test("the idle timeout is above the longest ask deadline of a request (the x402 checkout's and a catalog ingest's)", () => {
  expect(SERVER_IDLE_TIMEOUT_S * 1000).toBeGreaterThan(x402AskTimeoutMs(x402Timeouts(new Map())) + 5_000);
  expect(SERVER_IDLE_TIMEOUT_S * 1000).toBeGreaterThan(60_000);
  expect(SERVER_IDLE_TIMEOUT_S).toBeLessThanOrEqual(255); // Bun's cap
});

test("a request without a body answered within the idle timeout reaches its caller", async () => {
  const res = await fetch(`${srv.url}/api/v1/test/slow?ms=2000`, { keepalive: false });
  expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "answered after 2000 ms" });
}, 30_000);

test("a request without a body still pending past the idle timeout given to boot is cut by it, not by Elysia's 30 s default", async () => {
  const started = Date.now();
  const outcome = await fetch(`${srv.url}/api/v1/test/slow?ms=20000`, { keepalive: false }).then(
    async (res) => `answered ${res.status} ${await res.text()}`,
    (err: Error) => `reset: ${err.message}`,
  );
  const took = Date.now() - started;
  expect(outcome).toStartWith("reset: ECONNRESET");
  expect(took).toBeGreaterThanOrEqual(IDLE_S * 1000 - SWEEP_MS - 100); // never before the timeout's first sweep
  expect(took).toBeLessThan(IDLE_S * 1000 + 3_000); // the 8 s timeout (and some slack), far from Elysia's 30 s
}, 30_000);
