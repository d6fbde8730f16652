/**
 * A TCP proxy in front of Postgres that a test controls, to show the service a database outage: "stall" stops
 * forwarding in both directions and holds new connections (what a frozen server or a partition looks like to the
 * client: open sockets, no answer), "resume" forwards again, "down" closes every connection and the listener
 * (refused connections), "up" listens again on the same port. `loseReplyAfter` forwards the next statement whose
 * text matches and then drops that connection without its answer: the statement ran (and committed, if autocommit),
 * its acknowledgement never arrived.
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from "node:net";
import { serverUrl } from "./db.ts";

interface Pair {
  client: Socket;
  upstream: Socket | null;
}

export class PgProxy {
  private server: Server;
  private pairs: Pair[] = [];
  private stalled = false;
  private loseReply?: { match: Buffer; afterMs: number; done: () => void };
  port = 0;

  constructor(private target: { host: string; port: number }) {
    this.server = createServer(this.accept);
  }

  /** A proxy to the test Postgres server, listening. */
  static async toTestServer(): Promise<PgProxy> {
    const base = new URL(await serverUrl());
    const proxy = new PgProxy({ host: base.hostname, port: Number(base.port || 5432) });
    await proxy.start();
    return proxy;
  }

  /** `url` (a database on the test server) with its host and port replaced by this proxy's. */
  via(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  private accept = (client: Socket): void => {
    const pair: Pair = { client, upstream: null };
    this.pairs.push(pair);
    client.on("error", () => {});
    // registered before link()'s pipe: it sees each chunk before the chunk is forwarded
    client.on("data", (chunk: Buffer) => {
      const lose = this.loseReply;
      if (!lose || !chunk.includes(lose.match)) return;
      this.loseReply = undefined;
      pair.upstream?.unpipe(client); // the answer never reaches the client
      setTimeout(() => {
        client.destroy();
        pair.upstream?.destroy();
        lose.done();
      }, lose.afterMs);
    });
    if (this.stalled) {
      client.pause(); // accepted, never answered: the client's connect timeout decides
      return;
    }
    this.link(pair);
  };

  private link(pair: Pair): void {
    if (!pair.upstream) {
      pair.upstream = tcpConnect(this.target.port, this.target.host);
      pair.upstream.on("error", () => pair.client.destroy());
      pair.upstream.on("close", () => pair.client.destroy());
      pair.client.on("close", () => pair.upstream?.destroy());
    }
    // unpipe first: after stallToServer the other direction is still piped, and a second pipe would copy twice
    pair.client.unpipe();
    pair.upstream.unpipe();
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
    pair.client.resume();
    pair.upstream.resume();
  }

  async start(): Promise<void> {
    await new Promise<void>((res) => this.server.listen(0, "127.0.0.1", () => res()));
    this.port = (this.server.address() as { port: number }).port;
  }

  /**
   * Arms a one-shot lost acknowledgement: the next client message containing `text` (a statement's text goes out
   * with its first execution on a connection) is forwarded, its connection is closed `afterMs` later without any
   * answer reaching the client. Resolves when that connection has been closed.
   */
  loseReplyAfter(text: string, afterMs = 200): Promise<void> {
    return new Promise((done) => {
      this.loseReply = { match: Buffer.from(text), afterMs, done };
    });
  }

  stall(): void {
    this.stalled = true;
    for (const p of this.pairs) {
      p.client.unpipe();
      p.upstream?.unpipe();
      p.client.pause();
      p.upstream?.pause();
    }
  }

  /**
   * Holds what the clients send (the server's messages still arrive) until `resume`: a client whose outgoing
   * messages, e.g. a NATS UNSUB or its replies, are late to reach the server.
   */
  stallToServer(): void {
    for (const p of this.pairs) {
      p.client.unpipe();
      p.client.pause();
    }
  }

  resume(): void {
    this.stalled = false;
    for (const p of this.pairs) if (!p.client.destroyed) this.link(p);
  }

  /** Listens again on the same port after `down` (the database is reachable again). */
  async up(): Promise<void> {
    this.server = createServer(this.accept);
    await new Promise<void>((res) => this.server.listen(this.port, "127.0.0.1", () => res()));
  }

  async down(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream?.destroy();
    }
    this.pairs = [];
    await new Promise<void>((res) => this.server.close(() => res()));
  }
}
