/**
 * A wrong key is counted like anonymous traffic even when the client hangs up before the answer. The address is
 * read only after the key actor's answer (docs/decisions.md, "Lazy client address"): a client still connected then
 * is counted against its own address, one already gone under "unknown" with every other departed client — each
 * request exactly once, in one of the two.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { agentAuth } from "../../gateway/plugins/auth.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { bucketsFor } from "../../actors/agent/limits.ts";
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

  test("each wrong-key request is counted once, against the caller's address or, once it has hung up, under unknown", async () => {
    // the departed clients' bucket, read by admitting one unit to it (so each read itself takes one)
    const departed = async () => {
      const all = bucketsFor({ surface: "rest-agent", ip: "unknown", toolName: null });
      const buckets = all.map(({ id, limit, windowMs }) => ({ id, limit, windowMs }));
      const res = await srv.running.services.actors.ask(ipActor, all[0]!.owner, "admit", { buckets });
      expect(res.allowed).toBe(true);
      return res.rate.remaining;
    };
    const remaining = async () => {
      const r = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: { "x-agent-api-key": randomKey() } });
      expect(r.status).toBe(401);
      return Number(r.headers.get("x-ratelimit-remaining"));
    };
    const port = Number(new URL(srv.url).port);
    const r0 = await remaining();
    const u0 = await departed();
    const N = 20;
    for (let i = 0; i < N; i++) await sendAndHangUp(port);
    await Bun.sleep(500);
    const r1 = await remaining();
    const u1 = await departed();
    const countedOwn = r0 - r1 - 1; // minus the probe
    const countedDeparted = u0 - u1 - 1; // minus the read
    expect(countedOwn + countedDeparted).toBe(N);
  });
});
