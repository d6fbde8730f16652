/**
 * The x402 facilitator client against a name with two addresses (review session 17, known and left, F2: fetchVetted
 * connected to the first vetted address only, so a dual-stack facilitator whose first address is down failed although
 * the other served). 127.0.0.1 and 127.0.0.2 stand for the two addresses, on the URL's one port: a /verify reaches the
 * second when the first refuses connections, or, black-holed, after about the attempt delay (the connects are raced,
 * RFC 8305); a /settle whose connection was reset after the request was written is never sent to the second (it may
 * have been acted on: `connection_lost`, `settlement "unknown"`).
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { ActorError } from "../../actors/runtime/errors.ts";
import type { Resolver } from "../../infra/ssrf.ts";
import { CONNECT_ATTEMPT_DELAY_MS } from "../../infra/outbound-http.ts";
import { createFacilitatorClient } from "../../infra/x402/facilitator-client.ts";
import { listenBesideHold } from "../helpers/tcp-black-hole.ts";

let seen: string[] = [];
// the second address's server, and 127.0.0.1 at its port held (refusing connects) but while a test stands there
const { server: second, port: PORT, hold: first } = listenBesideHold(() => {
  const server = Bun.serve({
    hostname: "127.0.0.2",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      seen.push(`${req.method} ${path} ${req.headers.get("host")}`);
      await req.text();
      return path === "/settle"
        ? Response.json({ success: true, transaction: "0xfeed", network: "eip155:84532", payer: "0xabc" })
        : Response.json({ isValid: true, payer: "0xabc" });
    },
  });
  return { server, port: server.port!, stop: () => server.stop(true) };
});
let resetter: TCPSocketListener<undefined> | undefined;
afterAll(() => {
  resetter?.stop(true);
  first.release();
  second.stop(true);
});
beforeEach(() => {
  seen = [];
});

const resolve: Resolver = async (host) => {
  if (host !== "facilitator.dual.test") throw new Error(`ENOTFOUND ${host}`);
  return [
    { address: "127.0.0.1", family: 4 },
    { address: "127.0.0.2", family: 4 },
  ];
};
const client = () => createFacilitatorClient({ url: `http://facilitator.dual.test:${PORT}`, timeoutMs: 3_000, allowPrivate: true, resolve });

const payload = {
  x402Version: 2,
  accepted: { scheme: "exact", network: "eip155:84532" },
  payload: { signature: "0x01", authorization: { from: "0xa", to: "0xb", value: "10000", validAfter: "0", validBefore: "99", nonce: "0x02" } },
} as unknown as PaymentPayload;
const requirements = { scheme: "exact", network: "eip155:84532", asset: "0xc", amount: "10000", payTo: "0xb", maxTimeoutSeconds: 300, extra: {} } as PaymentRequirements;

describe("a facilitator name with two addresses", () => {
  test("the first address refusing connections, verify and settle are answered by the second", async () => {
    expect(await client().verify(payload, requirements)).toMatchObject({ isValid: true, payer: "0xabc" });
    expect(await client().settle(payload, requirements)).toMatchObject({ success: true, transaction: "0xfeed" });
    expect(seen).toEqual([`POST /verify facilitator.dual.test:${PORT}`, `POST /settle facilitator.dual.test:${PORT}`]);
  });

  test("the first address black-holed (its SYNs dropped), a settle reaches the second after about the attempt delay, not a connect deadline later, once", async () => {
    const hole = await first.blackHole();
    try {
      const started = performance.now();
      expect(await client().settle(payload, requirements)).toMatchObject({ success: true, transaction: "0xfeed" });
      const took = performance.now() - started;
      expect(seen).toEqual([`POST /settle facilitator.dual.test:${PORT}`]);
      // one address after another, the first had min(2 s, deadline / 2) = 2 s before the second was asked
      expect(took).toBeGreaterThanOrEqual(CONNECT_ATTEMPT_DELAY_MS - 5);
      expect(took).toBeLessThan(1_000);
      expect(hole.pendingConnects()).toBe(0);
    } finally {
      hole.close();
    }
  });

  test("a settle whose connection is reset after it was sent is connection_lost, settlement unknown, and never sent to the second address", async () => {
    let requests = 0;
    first.release();
    resetter = Bun.listen({
      hostname: "127.0.0.1",
      port: PORT,
      socket: {
        data(socket: Socket<undefined>) {
          requests++;
          socket.terminate();
        },
      },
    });
    try {
      const err = await client().settle(payload, requirements).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ActorError);
      const e = err as ActorError;
      expect(e.code).toBe("UPSTREAM_UNAVAILABLE");
      expect(e.details).toMatchObject({ operation: "settle", reason: "connection_lost", settlement: "unknown" });
      expect(requests).toBe(1);
      expect(seen).toEqual([]);
    } finally {
      resetter.stop(true);
      resetter = undefined;
      first.hold();
    }
  });

  test("both addresses refusing is unreachable, settlement not attempted", async () => {
    const err = (await createFacilitatorClient({
      url: `http://facilitator.dual.test:${PORT}`,
      timeoutMs: 3_000,
      allowPrivate: true,
      resolve: async () => [
        { address: "127.0.0.1", family: 4 },
        { address: "127.0.0.3", family: 4 },
      ],
    })
      .settle(payload, requirements)
      .catch((e: unknown) => e)) as ActorError;
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toMatchObject({ operation: "settle", reason: "unreachable", settlement: "not_attempted" });
    expect(seen).toEqual([]);
  });
});
