/**
 * A wrong key is counted against the caller's own address (the global per-IP layer) even when the client hangs up
 * before the answer: the address is read before the key actor is asked (review finding on the lazy lookup).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { agentAuth } from "../../gateway/plugins/auth.ts";
import type { Services } from "../../gateway/services.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const probes = (svc: Services) =>
  new Elysia({ name: "rate-limit-probes" }).use(agentAuth(svc)).post("/api/v1/agent/search", ({ agent }) => ({ success: true, data: { keyId: agent.keyId } }));

const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const randomKey = () => "agnt_" + Array.from({ length: 43 }, () => B62[Math.floor(Math.random() * 62)]).join("");

/** Writes a whole request with a wrong (well-formed) key and closes the socket at once. */
async function sendAndHangUp(port: number): Promise<void> {
  const sock = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {}, close() {} } });
  sock.write(`POST /api/v1/agent/search HTTP/1.1\r\nHost: x\r\nX-Agent-Api-Key: ${randomKey()}\r\nContent-Length: 0\r\n\r\n`);
  sock.end();
}

describe("key guessing with hang-ups", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ seed: false, boot: { extraModules: [probes] } });
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("each wrong-key request is counted against the caller's own address, even when it hangs up", async () => {
    const remaining = async () => {
      const r = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: { "x-agent-api-key": randomKey() } });
      expect(r.status).toBe(401);
      return Number(r.headers.get("x-ratelimit-remaining"));
    };
    const port = Number(new URL(srv.url).port);
    const r0 = await remaining();
    const N = 20;
    for (let i = 0; i < N; i++) await sendAndHangUp(port);
    await Bun.sleep(500);
    const r1 = await remaining();
    expect(r1).toBe(r0 - N - 1);
  });
});
