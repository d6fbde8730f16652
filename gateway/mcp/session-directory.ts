/**
 * The MCP session directory: what any gateway of a deployment needs to serve a session it did not open
 * (docs/decisions.md, "MCP sessions in a shared directory"). Two implementations behind one interface and one
 * contract test (test/mcp/session-directory.test.ts):
 *
 * - `MemorySessionDirectory`: the embedded default (one process, one gateway);
 * - `NatsSessionDirectory`: distributed mode (NATS_URL), a JetStream KV bucket shared by the gateways.
 *
 * An entry lives `ttlMs` (the session idle timeout) from its last write. `touch` writes only when the stored
 * `lastUsedAt` is at least `TOUCH_EVERY_MS` old, so a busy session costs one write a minute, not one per request.
 * Every write but `put` is a compare-and-set on the entry's revision: a touch or a bind racing a DELETE on another
 * gateway fails instead of bringing the ended session back.
 *
 * An entry holds no secret: the binding is the principal's id (an agent key's id, `oauth:<client>:<sub>`), never a
 * key or a token.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Endpoint } from "./registry.ts";

/** A session unused this long ends (its entry expires; a gateway's local copy is closed). */
export const SESSION_IDLE_MS = 30 * 60_000;
/** The services.extras key of the process's directory (boot.ts, `openSessionDirectory`). */
export const SESSION_DIRECTORY = "mcpSessionDirectory";
/** How often at most a used session's entry is written again (its TTL restarts then). */
export const TOUCH_EVERY_MS = 60_000;
export const SESSIONS_BUCKET = "mcp_sessions";

/** The client's `initialize` params, as sent: adopting the session replays them (server.ts `adopt`). */
export interface ClientInit {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown>;
}

export interface SessionRecord {
  id: string;
  slug: string;
  endpoint: Endpoint;
  /** The store's tool set when the session opened (fixed for the session; null = every tool). */
  enabled: readonly string[] | null;
  /** ipBucketKey of the address that opened it (an unbound session may be used from there only). */
  owner: string;
  /** The principal it is bound to (key id, `oauth:<client>:<sub>`), or null while no credential was seen. */
  principal: string | null;
  /** The protocol version negotiated at initialize. */
  protocolVersion: string;
  client: ClientInit;
  createdAt: number;
  lastUsedAt: number;
}

/** A record with the revision it was read at (the compare-and-set token of the writes below). */
export interface Held {
  record: SessionRecord;
  revision: number;
}

/**
 * A client's message another gateway handed on after checking the caller's binding to the session: an answer to a
 * server request, forwarded to the gateway whose session copy asked it, or a `notifications/cancelled`, broadcast.
 */
export type Forwarded = (sessionId: string, message: Record<string, unknown>) => void;

export interface SessionDirectory {
  readonly kind: "memory" | "nats";
  /** This gateway among the directory's users: server.ts puts it in the ids of the requests it sends clients. */
  readonly gatewayId: string;
  /**
   * Hands a client's answer (a JSON-RPC response) to gateway `gatewayId`, whose copy of the session is waiting for it
   * (an `elicitation/create` on a tool call's stream there). Best effort: an answer that is lost leaves the question
   * unanswered, which ends as UPSTREAM_UNAVAILABLE confirmation_not_completed (nothing changed).
   */
  forward(gatewayId: string, sessionId: string, message: Record<string, unknown>): Promise<void>;
  /**
   * Hands a client's `notifications/cancelled` to every other gateway of the deployment: the client's request id is
   * its own and names no gateway, so the gateway that received the cancel cannot tell which one runs the call. Each
   * acts on it only if it holds a copy of session `sessionId` running that request (server.ts `cancelHere`). Best
   * effort, as `forward`: a cancel that is lost leaves the call running, its question ending unanswered after 5 min.
   */
  broadcast(sessionId: string, message: Record<string, unknown>): Promise<void>;
  /** Receives the answers other gateways forward to this one, and the cancels they broadcast; returns the way to stop. */
  onForwarded(handler: Forwarded): () => void;
  get(id: string): Promise<Held | undefined>;
  /** Records a new session (initialize). */
  put(record: SessionRecord): Promise<void>;
  /**
   * Binds an unbound session to `principal`. Returns the entry as it stands afterwards: bound to `principal`, or to
   * whoever bound it first, or undefined when it is gone.
   */
  bind(held: Held, principal: string): Promise<Held | undefined>;
  /** Restarts the entry's TTL when `lastUsedAt` is TOUCH_EVERY_MS old; a no-op otherwise, or when it is gone. */
  touch(held: Held, now: number): Promise<void>;
  /** Ends the session for every gateway. */
  delete(id: string): Promise<void>;
  close(): Promise<void>;
}

function due(held: Held, now: number): boolean {
  return now - held.record.lastUsedAt >= TOUCH_EVERY_MS;
}

/** A gateway id: 8 hex digits, random per process. */
function newGatewayId(): string {
  return crypto.randomUUID().slice(0, 8);
}

export class MemorySessionDirectory implements SessionDirectory {
  readonly kind = "memory";
  readonly gatewayId = newGatewayId();
  private handler?: Forwarded;
  private entries = new Map<string, { record: SessionRecord; revision: number; writtenAt: number }>();
  private revision = 0;
  private sweeper: ReturnType<typeof setInterval>;

  constructor(
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(ttlMs, 60_000));
    (this.sweeper as { unref?: () => void }).unref?.();
  }

  private sweep(): void {
    const t = this.now();
    for (const [id, e] of this.entries) if (t - e.writtenAt > this.ttlMs) this.entries.delete(id);
  }

  // Records are never changed in place (bind and touch write new ones), so a read hands out the stored object,
  // frozen, instead of a copy per request.
  private write(record: SessionRecord): void {
    this.entries.set(record.id, { record: Object.freeze({ ...record }), revision: ++this.revision, writtenAt: this.now() });
  }

  async get(id: string): Promise<Held | undefined> {
    const e = this.entries.get(id);
    if (!e) return undefined;
    if (this.now() - e.writtenAt > this.ttlMs) {
      this.entries.delete(id);
      return undefined;
    }
    return { record: e.record, revision: e.revision };
  }

  async put(record: SessionRecord): Promise<void> {
    this.write(record);
  }

  async bind(held: Held, principal: string): Promise<Held | undefined> {
    const cur = await this.get(held.record.id);
    if (!cur || cur.record.principal !== null) return cur;
    this.write({ ...cur.record, principal });
    return this.get(held.record.id);
  }

  async touch(held: Held, now: number): Promise<void> {
    if (!due(held, now)) return;
    const cur = this.entries.get(held.record.id);
    if (cur && cur.revision === held.revision) this.write({ ...cur.record, lastUsedAt: now });
  }

  async delete(id: string): Promise<void> {
    this.entries.delete(id);
  }

  async forward(gatewayId: string, sessionId: string, message: Record<string, unknown>): Promise<void> {
    // one process, one gateway: an answer for another gateway has nobody to go to
    if (gatewayId === this.gatewayId) this.handler?.(sessionId, message);
  }

  async broadcast(): Promise<void> {
    // one process, one gateway: the gateway that received the cancel holds every copy there is
  }

  onForwarded(handler: Forwarded): () => void {
    this.handler = handler;
    return () => (this.handler = undefined);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.entries.clear();
  }
}

/** "wrong last sequence" / "key exists": a compare-and-set that lost (the entry changed or was deleted meanwhile). */
function lostRace(err: unknown): boolean {
  return /wrong last sequence|key exists|10071/i.test(String((err as Error)?.message ?? err));
}

/** Core NATS subject of the answers forwarded to one gateway. */
const ANSWERS_PREFIX = "mcp.session-answers.";
/** Core NATS subject of the cancels every gateway receives (`broadcast`). */
const CANCELS_SUBJECT = "mcp.session-cancels";

/** A forwarded or broadcast message as published: the session, the client's message, and for a broadcast its sender. */
function parseForwarded(data: { sessionId?: unknown; message?: unknown; from?: unknown }): { sessionId: string; message: Record<string, unknown>; from?: unknown } | undefined {
  const { sessionId, message } = data;
  if (typeof sessionId !== "string" || !message || typeof message !== "object" || Array.isArray(message)) return undefined;
  return { sessionId, message: message as Record<string, unknown>, from: data.from };
}

export class NatsSessionDirectory implements SessionDirectory {
  readonly kind = "nats";
  readonly gatewayId = newGatewayId();
  private constructor(
    private readonly kv: KV,
    private readonly nc: NatsConnection,
  ) {}

  /**
   * Opens (creating if needed) the bucket; entries expire `ttlMs` after their last write.
   * Reads go to the stream's leader, never a replica (`allow_direct: false`): with direct gets any of the R3 replicas
   * answers, and a follower that lags told another gateway a session opened a moment ago did not exist (404) or that
   * one just DELETEd or bound was still open or unbound (review RH, finding 3). A bucket created earlier with direct
   * gets is switched over here (`leaderReads`), so an upgraded deployment gets the same guarantee.
   */
  static async open(nc: NatsConnection, ttlMs: number, bucket = SESSIONS_BUCKET, replicas = 3): Promise<NatsSessionDirectory> {
    const kvm = new Kvm(nc);
    let kv: KV;
    try {
      kv = await kvm.create(bucket, { history: 1, ttl: ttlMs, replicas, allow_direct: false });
    } catch (err) {
      const msg = String((err as Error)?.message ?? err);
      // a single nats-server cannot hold 3 replicas
      if (replicas > 1 && /replica|clustered|insufficient resources/i.test(msg)) return NatsSessionDirectory.open(nc, ttlMs, bucket, 1);
      kv = await kvm.open(bucket, { allow_direct: false });
    }
    await leaderReads(nc, bucket);
    return new NatsSessionDirectory(kv, nc);
  }

  async get(id: string): Promise<Held | undefined> {
    if (!validId(id)) return undefined; // a header value that is no KV key cannot name a session
    const e = await this.kv.get(id);
    if (!e || e.operation !== "PUT" || e.length === 0) return undefined;
    return { record: e.json<SessionRecord>(), revision: e.revision };
  }

  async put(record: SessionRecord): Promise<void> {
    await this.kv.put(record.id, JSON.stringify(record));
  }

  async bind(held: Held, principal: string): Promise<Held | undefined> {
    let cur: Held | undefined = held;
    for (let i = 0; i < 5 && cur && cur.record.principal === null; i++) {
      const record = { ...cur.record, principal };
      try {
        return { record, revision: await this.kv.update(record.id, JSON.stringify(record), cur.revision) };
      } catch (err) {
        if (!lostRace(err)) throw err;
        cur = await this.get(held.record.id);
      }
    }
    return cur;
  }

  async touch(held: Held, now: number): Promise<void> {
    if (!due(held, now)) return;
    const record = { ...held.record, lastUsedAt: now };
    await this.kv.update(record.id, JSON.stringify(record), held.revision).catch((err) => {
      if (!lostRace(err)) throw err; // someone else touched, bound or deleted it first: nothing to do
    });
  }

  async delete(id: string): Promise<void> {
    if (validId(id)) await this.kv.purge(id);
  }

  async forward(gatewayId: string, sessionId: string, message: Record<string, unknown>): Promise<void> {
    // throws on a closed connection or a message over max_payload: routeAnswer logs it (best effort)
    this.nc.publish(`${ANSWERS_PREFIX}${gatewayId}`, JSON.stringify({ sessionId, message }));
  }

  async broadcast(sessionId: string, message: Record<string, unknown>): Promise<void> {
    // one publish, whatever the number of gateways; `from`: the sender's own copy does not run the call (server.ts
    // `routeCancel` cancels it there instead of broadcasting), so its own subscription skips it
    this.nc.publish(CANCELS_SUBJECT, JSON.stringify({ sessionId, message, from: this.gatewayId }));
  }

  onForwarded(handler: Forwarded): () => void {
    const receive = (mine: (f: { from?: unknown }) => boolean) => ({
      callback: (err: Error | null, m: { json<T>(): T }) => {
        if (err) return;
        try {
          const f = parseForwarded(m.json<Record<string, unknown>>());
          if (f && mine(f)) handler(f.sessionId, f.message);
        } catch {
          /* not a forwarded message: ignored */
        }
      },
    });
    const answers = this.nc.subscribe(`${ANSWERS_PREFIX}${this.gatewayId}`, receive(() => true));
    const cancels = this.nc.subscribe(CANCELS_SUBJECT, receive((f) => f.from !== this.gatewayId));
    return () => {
      answers.unsubscribe();
      cancels.unsubscribe();
    };
  }

  async close(): Promise<void> {}
}

/** Session ids are the SDK's random UUIDs; anything else is not looked up. */
function validId(id: string): boolean {
  return /^[0-9a-f-]{36}$/i.test(id);
}

/** Turns off direct gets on an existing bucket's stream (`NatsSessionDirectory.open`); a no-op once they are off. */
async function leaderReads(nc: NatsConnection, bucket: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${bucket}`;
  const { config } = await jsm.streams.info(stream);
  if (config.allow_direct) await jsm.streams.update(stream, { ...config, allow_direct: false });
}

/**
 * The deployment's directory, opened once per gateway process by boot.ts (which also closes it, after the MCP
 * gateway): the KV bucket when the gateway talks NATS, else this process's memory.
 */
export async function openSessionDirectory(nc?: NatsConnection): Promise<SessionDirectory> {
  return nc ? NatsSessionDirectory.open(nc, SESSION_IDLE_MS) : new MemorySessionDirectory(SESSION_IDLE_MS);
}
