/**
 * A facilitator stand-in for tests: a raw TCP HTTP/1.1 proxy in front of the devnet facilitator, so a test can make
 * the failures a real deployment sees AFTER the facilitator acted (payments audit B2): the transfer is on chain, the
 * answer is lost or misleading. Raw TCP (node:net) because `Bun.serve` cannot drop a connection mid-request.
 *
 * `/verify` and `/supported` are forwarded untouched in every mode. `/settle`, by `proxy.settleMode`:
 * - `pass`: forwarded;
 * - `reset`: forwarded (the transfer happens), then the connection is dropped without an answer;
 * - `receipt_timeout`: forwarded, then answered `success: false` with the error @x402/evm's facilitator gives when
 *   its receipt wait throws after the broadcast (`transaction: ""`);
 * - `hold`: the request is held until `release()`, then forwarded; meanwhile the listener is closed and idle
 *   connections dropped, so every new call is refused (ECONNREFUSED) until `up()`;
 * - `refused_with_tx`: forwarded (the transfer happens), then answered `success: false` with a reason of the
 *   pre-broadcast allowlist (`invalid_exact_evm_transaction_simulation_failed`) and the real transaction, as a
 *   facilitator that retried internally after a lost answer may (review R4-6);
 * - `refused_no_tx`: the same, but without the transaction (`transaction: ""`), as a refusal given before any broadcast
 *   reads, although the transfer happened;
 * - `drop`: the connection is dropped after the request was read, which is never forwarded: the caller sees a reset
 *   (an unknown outcome) although nothing happened.
 */
import net from "node:net";

export type SettleMode = "pass" | "reset" | "receipt_timeout" | "refused_with_tx" | "refused_no_tx" | "hold" | "drop";

export interface FacilitatorProxy {
  readonly url: string;
  settleMode: SettleMode;
  /** /settle requests received (whatever the mode). */
  readonly settles: number;
  /** Resolves when a held /settle has arrived. */
  held(): Promise<void>;
  /** Forwards the held /settle (the transfer happens now); resolves once the facilitator answered it. */
  release(): Promise<string>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  stop(): Promise<void>;
}

interface Request {
  method: string;
  path: string;
  body: string;
}

export async function startFacilitatorProxy(upstream: string): Promise<FacilitatorProxy> {
  const sockets = new Set<net.Socket>();
  const busy = new WeakSet<net.Socket>();
  let server: net.Server;
  let port = 0;
  let settles = 0;
  let heldArrived: () => void = () => {};
  let heldPromise = new Promise<void>((r) => (heldArrived = r));
  let releaseHeld: (() => Promise<string>) | null = null;

  const forward = async (req: Request): Promise<{ status: number; text: string }> => {
    const r = await fetch(upstream + req.path, {
      method: req.method,
      headers: { "content-type": "application/json" },
      body: req.method === "POST" ? req.body : undefined,
    });
    return { status: r.status, text: await r.text() };
  };
  const answer = (sock: net.Socket, status: number, text: string) => {
    if (sock.destroyed) return;
    sock.write(`HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: keep-alive\r\n\r\n${text}`);
  };

  const handle = async (sock: net.Socket, req: Request) => {
    if (req.path !== "/settle") {
      const r = await forward(req);
      return answer(sock, r.status, r.text);
    }
    settles++;
    switch (proxy.settleMode) {
      case "pass": {
        const r = await forward(req);
        return answer(sock, r.status, r.text);
      }
      case "reset": {
        await forward(req);
        sock.destroy();
        return;
      }
      case "drop": {
        sock.destroy();
        return;
      }
      case "receipt_timeout": {
        const up = JSON.parse((await forward(req)).text) as { transaction: string; network: string; payer: string };
        return answer(
          sock,
          200,
          JSON.stringify({ success: false, errorReason: `Timed out while waiting for transaction with hash "${up.transaction}" to be confirmed.`, transaction: "", network: up.network, payer: up.payer }),
        );
      }
      case "refused_with_tx": {
        const up = JSON.parse((await forward(req)).text) as { transaction: string; network: string; payer: string };
        return answer(
          sock,
          200,
          JSON.stringify({ success: false, errorReason: "invalid_exact_evm_transaction_simulation_failed", transaction: up.transaction, network: up.network, payer: up.payer }),
        );
      }
      case "refused_no_tx": {
        const up = JSON.parse((await forward(req)).text) as { network: string; payer: string };
        return answer(
          sock,
          200,
          JSON.stringify({ success: false, errorReason: "invalid_exact_evm_transaction_simulation_failed", transaction: "", network: up.network, payer: up.payer }),
        );
      }
      case "hold": {
        await down();
        releaseHeld = async () => {
          const r = await forward(req);
          answer(sock, r.status, r.text);
          return r.text;
        };
        heldArrived();
        return;
      }
    }
  };

  const onConnection = (sock: net.Socket) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    let buf = Buffer.alloc(0);
    sock.on("data", (d: Buffer | string) => {
      buf = Buffer.concat([buf, typeof d === "string" ? Buffer.from(d) : d]);
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buf.subarray(0, end).toString();
        const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        const body = buf.subarray(end + 4, end + 4 + len).toString();
        buf = buf.subarray(end + 4 + len);
        const [method = "GET", path = "/"] = head.split(" ");
        busy.add(sock);
        void handle(sock, { method, path, body })
          .catch(() => sock.destroy())
          .finally(() => busy.delete(sock));
      }
    });
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer(onConnection);
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        port = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const down = async () => {
    // close() stops accepting at once; its callback would wait for the held connection, so it is not awaited
    server.close();
    // A pooled keep-alive connection would carry the next call past the closed listener: drop the idle ones.
    for (const s of sockets) if (!busy.has(s)) s.destroy();
  };

  await listen();
  const proxy: FacilitatorProxy = {
    url: `http://127.0.0.1:${port}`,
    settleMode: "pass",
    get settles() {
      return settles;
    },
    held: () => heldPromise,
    async release() {
      const go = releaseHeld;
      if (!go) throw new Error("no /settle is held");
      releaseHeld = null;
      heldPromise = new Promise<void>((r) => (heldArrived = r));
      return go();
    },
    up: listen,
    async stop() {
      for (const s of sockets) s.destroy();
      if (server.listening) server.close();
    },
  };
  return proxy;
}
