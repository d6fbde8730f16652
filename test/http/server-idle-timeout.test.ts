/**
 * The HTTP server's idle timeout (review R4-7). Bun closes a connection that sent or received nothing for
 * `idleTimeout` seconds, and in Bun 1.4.5 that includes a request without a body whose answer is still pending (a
 * request with a body is not cut). Elysia's `listen` default is 30 s, below the x402 checkout's cart ask (35 s) and
 * a catalog ingest's (60 s). The gateway sets it explicitly (gateway/boot.ts SERVER_IDLE_TIMEOUT_S): a body-less
 * request answered after 36 s reaches its caller.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { x402AskTimeoutMs, x402Timeouts } from "../../actors/payments/x402-rail.ts";
import { SERVER_IDLE_TIMEOUT_S } from "../../gateway/boot.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;

/** A body-less request that waits, as a GET or an empty POST waiting on a long actor ask does. */
const slow = () =>
  new Elysia({ name: "test-slow" }).get("/api/v1/test/slow", async ({ query }) => {
    const ms = Number(query.ms);
    await Bun.sleep(ms);
    return new Response(`answered after ${ms} ms`);
  });

beforeAll(async () => {
  srv = await startServer({ seed: false, boot: { extraModules: [slow] } });
}, 60_000);

afterAll(async () => {
  await srv?.stop();
});

test("the idle timeout is above the longest ask deadline of a request (the x402 checkout's and a catalog ingest's)", () => {
  expect(SERVER_IDLE_TIMEOUT_S * 1000).toBeGreaterThan(x402AskTimeoutMs(x402Timeouts(new Map())) + 5_000);
  expect(SERVER_IDLE_TIMEOUT_S * 1000).toBeGreaterThan(60_000);
  expect(SERVER_IDLE_TIMEOUT_S).toBeLessThanOrEqual(255); // Bun's cap
});

test("a request without a body whose answer takes 36 s (past Elysia's 30 s default) is answered, not reset", async () => {
  const started = Date.now();
  const res = await fetch(`${srv.url}/api/v1/test/slow?ms=36000`);
  expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "answered after 36000 ms" });
  expect(Date.now() - started).toBeGreaterThanOrEqual(36_000);
}, 60_000);
