/**
 * The distributed bus: actor messages as NATS request/reply on `actor.<kind>.<partition>`, events on
 * `events.<topic>`, placement of partitions on hosts by rendezvous hashing over a JetStream KV membership bucket
 * (see placement.ts). JSON envelopes, the same ones the in-process transport carries.
 *
 * Wiring the process roles (gateway/main.ts):
 *
 *   // gateway: caller side only, never serves, never joins the membership bucket
 *   const transport = await createTransport(config);                 // actors/transport/index.ts
 *   const client = new ActorClient(transport);
 *
 *   // actor host
 *   const transport = await createTransport(config, { hostId });     // hostId optional (hostname-pid-random)
 *   const host = new ActorHost({ transport, sql, definitions, caller: new ActorClient(transport) });
 *   attachHost(transport, host);   // from index.ts; no-op in-process. Lets placement deactivate moved actors
 *                                  // and publish activation counts in the heartbeat. Call before host.start().
 *   await host.start();            // ActorHost calls transport.serve(kind, …) per kind: this joins the cluster
 *   …
 *   await host.stop(); await transport.close();   // close() leaves the bucket so others take over at once
 *
 * Or directly: `await NatsTransport.connect({ servers: config.NATS_URL, partitions: config.ACTOR_PARTITIONS })`.
 *
 * Failure model: a request that finds no responder, times out, or hits a closed connection rejects with
 * ActorError("actor_unavailable"); ActorClient retries it with the same msgId until its deadline, and ActorHost
 * applies a retried write once. During a partition move a message may find nobody, or two subscribed hosts, of
 * which the queue group gives it to one; its retry may reach the other. A host whose partition moved away (or
 * that is closing) drains the subscription and answers what still reaches it with actor_unavailable, so the retry
 * comes at once rather than after the caller's attempt timeout. Durable writes are fenced by version, so a loser's
 * write is refused and state never goes backwards.
 */
import { connect, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages } from "@nats-io/jetstream";
import { hostname } from "node:os";
import { isRequestId, type ReplyEnvelope, type RequestEnvelope } from "../runtime/envelope.ts";
import { ActorError } from "../runtime/errors.ts";
import { NO_ANSWER_TEXT, UNAVAILABLE_TEXT } from "../runtime/unavailable-text.ts";
import { describeError, noAnswerError, type NoAnswerReason } from "../runtime/no-answer.ts";
import { log as rootLog, type Logger } from "../../infra/log.ts";
import { DEFAULT_BUCKET, Membership, computeOwnership, partitionOf, partitionSubject } from "./placement.ts";
import type { EventHandler, HostMembership, ServeHandler, Transport } from "./transport.ts";

/** What placement needs from the ActorHost (structural, so tests can pass a stub). */
export interface PlacementHost {
  deactivate(pred: (kind: string, id: string) => boolean): void;
  activationCount(kind?: string): number;
  /** Whether `kind` hands its activations' memory over when they go (ActorHost: the rate-limit kinds). */
  handsOver?(kind: string): boolean;
  /** Resolves once every hand-over under way has been written or has failed. */
  handOversDone?(): Promise<void>;
  /**
   * A moved partition of a kind that hands over is served here now. `released`: every host that may have served it
   * released it, its hand-over written; false when a host that does not answer releases (an older version, mid
   * rolling upgrade) was live in the last TTL, or a host expired in the last TTL (a pause, a cut-off or a kill, not a
   * clean leave), whose hand-over may land after this host loads (ActorHost then runs its timed hold and re-reads).
   */
  placementChanged?(released?: boolean): void;
}

/**
 * The subject on which a host answers releases of its partitions (see `acquire`). Host ids are subject-safe
 * (placement.ts `validHostId`).
 */
function releaseSubject(hostId: string): string {
  return `actor-release.${hostId}`;
}

/** A release request: "I own `kind` partition `partition` as of membership revision `revision`". */
interface ReleaseRequest {
  kind: string;
  partition: number;
  revision: number;
}

/** How long a released host waits for its view to reach the asker's revision before it answers "still mine". */
const RELEASE_VIEW_WAIT_MS = 2_000;
/** One release request's wait for its answer (the asker asks again after it, while the other host is live). */
const RELEASE_ASK_MS = 5_000;
/** Pause between rounds of release requests that were not all granted (doubling up to RELEASE_RETRY_MAX_MS). */
const RELEASE_RETRY_MS = 50;
const RELEASE_RETRY_MAX_MS = 1_000;

export interface NatsTransportOptions {
  /** Comma-separated or list of server URLs (config.NATS_URL). */
  servers: string | string[];
  /** Partitions per kind (config.ACTOR_PARTITIONS); every process of a deployment must agree. */
  partitions?: number;
  /** Host identity in the membership bucket; only used once `serve` is called. */
  hostId?: string;
  /** Membership bucket (default `actor_hosts`); tests use their own. */
  bucket?: string;
  heartbeatMs?: number;
  /** A host whose last heartbeat is this much older than the newest one is dead (default 3000). */
  ttlMs?: number;
  /** Replicas for the KV bucket and the durable events stream (3, falling back to 1 on a single server). */
  replicas?: number;
  /** JetStream stream that captures `events.>` for durable subscribers (default `ACTOR_EVENTS`). */
  eventsStream?: string;
  /** Connection name shown by the server (monitoring). */
  name?: string;
  /** Keep the server order (tests pin processes to nodes); default randomised like the NATS client. */
  noRandomize?: boolean;
  log?: Logger;
  /** While the first connection is pending, a `waiting for NATS` warn line this often (default 5000 ms). */
  waitLogMs?: number;
}

/** Server URLs as they may be logged: without user, password or token (`nats://user:pw@host:4222` → `nats://host:4222`). */
export function serversForLog(servers: readonly string[]): string[] {
  return servers.map((s) => s.replace(/^((?:[a-z][a-z0-9+.-]*:\/\/)?)[^@/]*@/i, "$1"));
}

export const EVENTS_PREFIX = "events.";

const MAX_REMEMBERED_REPLIES = 200_000;

interface RememberedReply {
  expires: number;
  /** The encoded reply, once the turn has finished. */
  json?: string;
  /** The turn still running: a retry that arrives meanwhile waits for the same reply. */
  pending?: Promise<string>;
}

/** On the wire a request envelope also says how long the caller waits for this attempt. */
type WireRequest = RequestEnvelope & { waitMs?: number };

const dec = new TextDecoder();
const enc = new TextEncoder();

function unavailable(message: string): string {
  return JSON.stringify({ ok: false, error: { code: "actor_unavailable", message } });
}

/** A reply to a message whose connection is draining or closed cannot be sent; the caller's retry covers it. */
function respondSafely(msg: Msg, json: string): void {
  try {
    msg.respond(json);
  } catch {
    // connection closed under a turn that outlived close(): nothing to answer on
  }
}

export function defaultHostId(): string {
  const h = hostname().replace(/[^-_a-zA-Z0-9]/g, "-").slice(0, 60) || "host";
  return `${h}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}

export class NatsTransport implements Transport {
  readonly name = "nats";
  /**
   * A moved partition of a kind that hands over is served only after a release (`acquire`), and the host is told when
   * one was not possible (PlacementHost.placementChanged): ActorHost skips its timed backstop otherwise.
   */
  readonly releasesPartitions = true;
  readonly partitions: number;
  readonly hostId: string;
  private readonly handlers = new Map<string, ServeHandler>();

  /** How many partitions of each kind this host owns right now (operators' view, /metrics). */
  ownedPartitions(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [kind, parts] of this.subs) out[kind] = parts.size;
    return out;
  }
  /** kind → partition → subscription, for the partitions this host owns right now. */
  private readonly subs = new Map<string, Map<number, Subscription>>();
  /** `kind/partition` → a release under way (`acquire`): owned in our view, not served until the others released it. */
  private readonly acquiring = new Map<string, { cancelled: boolean }>();
  private releaseSub?: Subscription;
  /**
   * kind → when (performance.now()) a view last showed another host serving it whose hand-over a release may not
   * cover: a live host that does not answer releases (HostBeat.releases absent: an older version, mid rolling
   * upgrade), or one that stopped being live without leaving (its entry expired rather than deleted: a paused
   * process, a cut-off, a kill; review X-2). See `unreleasedMove`.
   */
  private readonly unreleasingSeen = new Map<string, number>();
  /**
   * The other hosts the last `rebalance` saw live. One that is still in the view but no longer live expired: it did
   * not leave (a clean stop deletes its entry, MemberView.remove, after its hand-over is written).
   */
  private liveOthers = new Set<string>();
  private readonly ttlMs: number;
  private readonly eventSubs = new Set<Subscription>();
  private readonly durables = new Set<ConsumerMessages>();
  private membership?: Membership;
  private joining?: Promise<void>;
  private host?: PlacementHost;
  private closed = false;
  private readonly log: Logger;
  // pause detection: a process frozen longer than this may have been declared dead and replaced
  private readonly pauseMs: number;
  private lastTick = performance.now();
  private ticker?: ReturnType<typeof setInterval>;
  /** Set after a detected pause: serve nothing until the view is current again. */
  private suspect = false;
  private recovering?: Promise<void>;
  private eventsStreamReady?: Promise<void>;
  /** Replies sent (or being computed) by msgId, kept until the caller's deadline: see handleOnce. */
  private readonly replies = new Map<string, RememberedReply>();
  private readonly replyOrder: [string, RememberedReply][] = [];
  private replyHead = 0;
  private lastSweep = 0;

  private constructor(
    readonly nc: NatsConnection,
    private readonly opts: NatsTransportOptions,
  ) {
    this.partitions = opts.partitions ?? 64;
    this.hostId = opts.hostId ?? defaultHostId();
    // gone, not merely not live: a live host can look dead for a moment after a JetStream stall (MemberView.isGone)
    this.hosts = { self: this.hostId, isLive: (hostId) => !(this.membership?.view.isGone(hostId) ?? false) };
    this.log = opts.log ?? rootLog.child({ component: "nats-transport" });
    const hb = opts.heartbeatMs ?? 1000;
    const ttl = opts.ttlMs ?? 3000;
    this.ttlMs = ttl;
    this.pauseMs = Math.max(300, ttl - hb - 500);
  }

  /**
   * Connects, retrying forever on later disconnects. Does not join the cluster: `serve` does that.
   *
   * The first connection is waited for as long as it takes (NATS may be started after the roles: docs/operations.md
   * "Start order"), but not silently (audit M-2): while it is pending, a warn line `waiting for NATS` every `waitLogMs`
   * (5 s) names the servers (credentials stripped), the connection attempts so far and the time waited; once connected
   * after such a line, an info line says so. Attempts are counted in the client's `reconnectToServer` hook, which is
   * called before every dial and changes nothing (null: the client's own choice).
   */
  static async connect(opts: NatsTransportOptions): Promise<NatsTransport> {
    const servers = (Array.isArray(opts.servers) ? opts.servers : opts.servers.split(","))
      .map((s) => s.trim())
      .filter(Boolean);
    const log = opts.log ?? rootLog.child({ component: "nats-transport" });
    const started = performance.now();
    let attempts = 0;
    let warned = false;
    const waiting = setInterval(() => {
      warned = true;
      log.warn("waiting for NATS: no server of NATS_URL answers yet; still trying", {
        servers: serversForLog(servers),
        attempts,
        waitedMs: Math.round(performance.now() - started),
      });
    }, opts.waitLogMs ?? 5000);
    try {
      const nc = await connect({
        servers,
        name: opts.name ?? `acs-${process.pid}`,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        reconnectJitter: 100,
        pingInterval: 5000,
        noRandomize: opts.noRandomize ?? false,
        waitOnFirstConnect: true,
        timeout: 5000,
        // nats.js otherwise builds an Error (a stack capture) for every request, only to decorate a later timeout with
        // where it started; request() maps every failure to a no-answer error that logs the subject and the error's
        // name and message (describeError), never its stack, so the trace was never read (~2-3 us of CPU a request).
        noAsyncTraces: true,
        reconnectToServer: () => {
          attempts++;
          return null;
        },
      });
      if (warned) log.info("connected to NATS", { server: serversForLog([nc.getServer()])[0], attempts, waitedMs: Math.round(performance.now() - started) });
      return new NatsTransport(nc, opts);
    } finally {
      clearInterval(waiting);
    }
  }

  /** Connected server (for diagnostics and tests). */
  get server(): string {
    return this.nc.getServer();
  }

  /** Host side: the ActorHost whose activations move with partitions. Call before `host.start()`. */
  attachHost(host: PlacementHost): void {
    this.host = host;
  }

  // ------------------------------------------------------------------------------------------------ requests

  async request(env: RequestEnvelope, timeoutMs: number): Promise<ReplyEnvelope> {
    if (this.closed) throw noAnswerError(UNAVAILABLE_TEXT, { reason: "transport_error", error: "transport closed" });
    const subject = partitionSubject(env.kind, partitionOf(env.id, this.partitions));
    const wait = Math.max(1, Math.floor(timeoutMs));
    const wire: WireRequest = { ...env, waitMs: wait };
    const payload = enc.encode(JSON.stringify(wire));
    // The server refuses a message above its max_payload, and would on every retry: refused here at once, not
    // retried as a lost message until the caller's deadline (audit A3-1: 60 s, then 503 "retry shortly").
    const limit = this.nc.info?.max_payload;
    if (limit !== undefined && payload.length > limit) throw this.tooLarge(env, subject, payload.length, limit);
    let msg: Msg;
    try {
      msg = await this.nc.request(subject, payload, { timeout: wait });
    } catch (err) {
      if (isMaxPayload(err)) throw this.tooLarge(env, subject, payload.length, this.nc.info?.max_payload);
      // no responders (nobody owns the partition right now), timeout, disconnect: all retryable by the caller, who
      // reads a fixed text (no actor, subject or timeout: docs/operations.md); which one and where go to the log
      // when the client gives up (ActorClient, runtime/no-answer.ts)
      throw noAnswerError(NO_ANSWER_TEXT, { reason: noAnswerReason(err), subject, error: describeError(err) });
    }
    try {
      return JSON.parse(dec.decode(msg.data)) as ReplyEnvelope;
    } catch {
      this.log.error("unreadable actor reply", { kind: env.kind, id: env.id, type: env.type, msgId: env.msgId, subject, bytes: msg.data.length });
      throw new ActorError("internal_error", "internal error");
    }
  }

  /** 413 `payload_too_large`, not retryable: the message is too large for the bus whoever serves it. */
  private tooLarge(env: RequestEnvelope, subject: string, bytes: number, limit: number | undefined): ActorError {
    this.log.warn("actor message over the NATS max_payload", { kind: env.kind, type: env.type, subject, bytes, maxPayload: limit });
    return new ActorError(
      "payload_too_large",
      `The request is too large to pass to the service's actors (${bytes} bytes; at most ${limit ?? "the NATS max_payload"}). Send it in smaller batches.`,
      { bytes, ...(limit !== undefined ? { limitBytes: limit } : {}) },
    );
  }

  // ------------------------------------------------------------------------------------------------ serving

  /** Registers `kind` and joins placement (first call); resolves once this host serves its partitions. */
  async serve(kind: string, handler: ServeHandler): Promise<void> {
    if (this.closed) throw new Error("transport closed");
    this.handlers.set(kind, handler);
    if (!this.subs.has(kind)) this.subs.set(kind, new Map());
    if (!this.joining) this.joining = this.join();
    await this.joining;
    // announce the new kind and wait until our own view includes it, so we own partitions before returning
    const rev = await this.membership!.beatNow();
    await this.membership!.seen(rev, 10_000);
    this.rebalance();
    await this.nc.flush(); // our subscriptions are known to the server once serve() resolves
  }

  private async join(): Promise<void> {
    // before our first heartbeat: nobody asks a host it has not seen
    this.releaseSub = this.nc.subscribe(releaseSubject(this.hostId), {
      callback: (err, msg) => {
        if (!err && msg.reply) void this.answerRelease(msg);
      },
    });
    this.membership = new Membership({
      nc: this.nc,
      hostId: this.hostId,
      bucket: this.opts.bucket ?? DEFAULT_BUCKET,
      heartbeatMs: this.opts.heartbeatMs,
      ttlMs: this.opts.ttlMs,
      replicas: this.opts.replicas,
      onChange: () => this.rebalance(),
      beat: () => this.beat(),
      onError: (what, err) => this.log.warn(`${what} failed`, { error: err as Error }),
    });
    this.ticker = setInterval(() => this.checkPause(), 100);
    await this.membership.start();
  }

  private beat() {
    const activations: Record<string, number> = {};
    const owned: Record<string, number> = {};
    for (const kind of this.handlers.keys()) {
      activations[kind] = this.host?.activationCount(kind) ?? 0;
      owned[kind] = this.subs.get(kind)?.size ?? 0;
    }
    return {
      kinds: [...this.handlers.keys()],
      partitions: this.partitions,
      activations,
      owned,
      startedAt: Date.now() - (this.membership?.uptimeMs ?? 0),
      pid: process.pid,
      hostname: hostname(),
      releases: true,
    };
  }

  /** Partitions this host serves now, per kind. */
  ownership(): Record<string, number[]> {
    const out: Record<string, number[]> = {};
    for (const [kind, m] of this.subs) out[kind] = [...m.keys()].sort((a, b) => a - b);
    return out;
  }

  /**
   * The membership placement uses, for the ActorHost's pending markers. Before this host has joined (nothing served
   * yet) nobody is known to be gone: every host counts as live.
   */
  readonly hosts: HostMembership;

  /**
   * Whether this process is a serving member of placement right now: it joined (`serve`), its heartbeat is current in
   * the bucket (Membership.isCurrent) and it is not holding back after a detected pause. An actor host's `/health`.
   */
  isMember(): boolean {
    return !this.closed && !this.suspect && (this.membership?.isCurrent() ?? false);
  }

  /** Live host ids as this host sees them (empty on a gateway). */
  liveHosts(kind?: string): string[] {
    return this.membership?.view.live(kind) ?? [];
  }

  /**
   * Ticks every 100 ms; a gap far longer than that means the process was frozen (SIGSTOP, VM pause, a huge GC)
   * long enough that the others may have taken our partitions over. Then we stop serving, drop every
   * activation (their in-memory state may be stale) and rejoin once a fresh heartbeat has gone round the bucket.
   */
  private checkPause(): boolean {
    const now = performance.now();
    if (now - this.lastSweep > 1000) {
      this.lastSweep = now;
      this.sweepReplies();
    }
    const gap = now - this.lastTick;
    this.lastTick = now;
    if (gap > this.pauseMs && this.membership && !this.closed) {
      this.log.warn("process was paused; re-checking placement before serving again", { pausedMs: Math.round(gap) });
      this.suspect = true;
      this.host?.deactivate(() => true);
      // stop taking messages (a queue group would keep handing us a share of them) until recover() resubscribes
      this.rebalance();
      this.recover();
    }
    return this.suspect;
  }

  private recover(): void {
    if (this.recovering) return;
    this.recovering = (async () => {
      for (;;) {
        if (this.closed) return;
        try {
          const rev = await this.membership!.beatNow();
          await this.membership!.seen(rev, 5000);
          break;
        } catch (err) {
          this.log.warn("rejoin after pause failed; retrying", { error: err as Error });
          await Bun.sleep(200);
        }
      }
      this.suspect = false;
      this.recovering = undefined;
      this.rebalance();
    })();
  }

  /** Recomputes ownership from the current view and (un)subscribes partitions that moved. */
  private rebalance(): void {
    if (this.closed || !this.membership) return;
    const view = this.membership.view;
    const now = performance.now();
    const liveOthers = new Set<string>();
    for (const m of view.all()) {
      if (m.hostId === this.hostId) continue;
      if (m.live) liveOthers.add(m.hostId);
      // A host that expired may resume and hand over what it counted (NatsTransport.checkPause → deactivate) after
      // its partitions were taken here without asking it: nothing waits for it, so the timed backstop must fold that
      // in (review X-2). A host that left cleanly is gone from the view, its hand-over written before it left.
      const expired = !m.live && this.liveOthers.has(m.hostId);
      if ((m.live && m.beat.releases !== true) || expired) for (const k of m.beat.kinds) this.unreleasingSeen.set(k, now);
    }
    this.liveOthers = liveOthers;
    const selfLive = !this.suspect && view.isLive(this.hostId);
    const ownership = computeOwnership(view, [...this.handlers.keys()], this.partitions);
    const lost = new Map<string, Set<number>>();
    for (const [kind, handler] of this.handlers) {
      const current = this.subs.get(kind)!;
      const owners = ownership.get(kind)!;
      for (let p = 0; p < this.partitions; p++) {
        const mine = selfLive && owners.get(p) === this.hostId;
        const sub = current.get(p);
        if (!mine) this.cancelAcquire(kind, p);
        if (mine && !sub) this.acquire(kind, p, handler);
        else if (!mine && sub) {
          // drain, not unsubscribe: unsubscribe forgets the subscription here at once, so whatever the server routed
          // to us before it processed the UNSUB was dropped unanswered and its caller waited a whole attempt timeout
          // (review R4-F2). Drained, those messages still reach the callback, which answers actor_unavailable.
          sub.drain().catch(() => {});
          current.delete(p);
          let s = lost.get(kind);
          if (!s) lost.set(kind, (s = new Set()));
          s.add(p);
        }
      }
    }
    if (lost.size) {
      const n = [...lost.values()].reduce((a, s) => a + s.size, 0);
      this.log.info("partitions moved away", { hostId: this.hostId, lost: n, liveHosts: view.live().length });
      this.host?.deactivate((kind, id) => lost.get(kind)?.has(partitionOf(id, this.partitions)) ?? false);
    }
  }

  /**
   * Starts serving partition `p` of `kind`, which our view says is ours. A kind whose activations hand their memory
   * over (the rate-limit buckets: PlacementHost.handsOver) is served only once every other live host serving it has
   * released the partition: answered our release request (`answerRelease`) after its own view reached ours, the
   * partition gone from it, and every hand-over it had under way written. Until then its previous owner keeps serving
   * it (or nobody does, and callers retry), so the activations here load what the old ones counted, however slow the
   * old owner's view or its write: no hold or re-read whose timing a loaded machine can outrun (CI at load 14: 500/15
   * min let 790 through). A host that stops being live in our view without leaving is not waited for: a killed host's
   * counts are lost anyway (docs/access.md), but a paused or cut-off one hands over when it resumes, after our load.
   * Nor is a host that does not answer releases (an older version, mid rolling upgrade: its moved partitions would
   * stay unserved until it stops). For both the host is told (`placementChanged(false)`, for one TTL after such a
   * host was last seen: `unreleasedMove`) and runs its timed backstop. Other kinds, and a partition no other host
   * could hold, are served at once.
   */
  private acquire(kind: string, p: number, handler: ServeHandler): void {
    const current = this.subs.get(kind)!;
    // the other live hosts serving the kind that answer releases (see HostBeat.releases)
    const others = () =>
      this.membership!.view
        .all()
        .filter((m) => m.live && m.hostId !== this.hostId && m.beat.releases === true && m.beat.kinds.includes(kind))
        .map((m) => m.hostId);
    if (!this.host?.handsOver?.(kind) || others().length === 0) {
      current.set(p, this.subscribePartition(kind, p, handler));
      if (this.host?.handsOver?.(kind)) this.host.placementChanged?.(!this.unreleasedMove(kind));
      return;
    }
    let unreleased = this.unreleasedMove(kind);
    const key = `${kind}/${p}`;
    if (this.acquiring.has(key)) return;
    const state = { cancelled: false };
    this.acquiring.set(key, state);
    void (async () => {
      const released = new Set<string>();
      let pause = RELEASE_RETRY_MS;
      try {
        for (;;) {
          if (state.cancelled || this.closed) return;
          const waiting = others().filter((h) => !released.has(h));
          if (waiting.length === 0) break;
          const revision = this.membership!.revision;
          const answers = await Promise.all(waiting.map((h) => this.askRelease(h, { kind, partition: p, revision })));
          waiting.forEach((h, i) => answers[i] && released.add(h));
          if (answers.every(Boolean)) continue; // a host that joined meanwhile is asked too
          await Bun.sleep(pause);
          pause = Math.min(pause * 2, RELEASE_RETRY_MAX_MS);
        }
      } catch (err) {
        this.log.warn("partition release failed; retried at the next placement change", { kind, partition: p, error: err as Error });
        return;
      } finally {
        if (this.acquiring.get(key) === state) this.acquiring.delete(key);
      }
      // still ours (rebalance cancels a partition that moved on), not closed, not paused since
      if (state.cancelled || this.closed || this.suspect || current.has(p)) return;
      unreleased ||= this.unreleasedMove(kind);
      // before the subscription, so its first messages see the change (their loads read; a timed hold, if any, applies)
      this.host?.placementChanged?.(!unreleased);
      current.set(p, this.subscribePartition(kind, p, handler));
      await this.nc.flush().catch(() => {});
    })();
  }

  /**
   * Whether a partition of `kind` taken now may have been served by a host that was not asked: one that does not
   * answer releases, live in a view of the last TTL, or one that expired (stopped being live without leaving) in the
   * last TTL. Its hand-over (to the end of its stop, or of its deactivation once it resumes, written in its own time)
   * may land after this host loads, so the host's timed backstop must run. The TTL covers an older host's clean stop:
   * it beats until it leaves, and its partitions are taken in the rebalance that sees it gone; an expired host's
   * partitions are taken in the rebalance that sees it expire. A clean leave of a host that answers releases, and a
   * join, mark nothing: its hand-over was written before its entry was deleted, or the joiner's `acquire` asked.
   */
  private unreleasedMove(kind: string): boolean {
    const seen = this.unreleasingSeen.get(kind);
    return seen !== undefined && performance.now() - seen <= this.ttlMs;
  }

  private cancelAcquire(kind: string, p: number): void {
    const key = `${kind}/${p}`;
    const state = this.acquiring.get(key);
    if (!state) return;
    state.cancelled = true;
    this.acquiring.delete(key);
  }

  /** True once `hostId` has released the partition; false for "not yet" (still its, no answer, no such host). */
  private async askRelease(hostId: string, req: ReleaseRequest): Promise<boolean> {
    try {
      const msg = await this.nc.request(releaseSubject(hostId), JSON.stringify(req), { timeout: RELEASE_ASK_MS });
      return (JSON.parse(dec.decode(msg.data)) as { released?: unknown }).released === true;
    } catch {
      return false;
    }
  }

  /**
   * Another host asks us to release a partition it now owns (`acquire`). Once our view is at least as new as its own
   * was, our rebalance has run on it: if the partition is still ours (subscribed or being acquired: our views still
   * disagree), the answer is "not yet" and it asks again; else its activations here were deactivated and their
   * hand-overs started, and the answer waits until those are written.
   */
  private async answerRelease(msg: Msg): Promise<void> {
    let released = false;
    try {
      const req = JSON.parse(dec.decode(msg.data)) as ReleaseRequest;
      await this.membership?.seen(req.revision, RELEASE_VIEW_WAIT_MS);
      this.rebalance();
      const held = !!this.subs.get(req.kind)?.has(req.partition) || this.acquiring.has(`${req.kind}/${req.partition}`);
      if (!held) {
        await this.host?.handOversDone?.();
        released = true;
      }
    } catch {
      // unreadable, or our view did not reach the asker's in time: "not yet"
    }
    respondSafely(msg, JSON.stringify({ released }));
  }

  /**
   * Each partition subject is subscribed in a queue group named after it: while a partition moves, its old and its
   * new owner are both subscribed for a moment, and NATS then gives each message to ONE of them. With plain
   * subscriptions both got it (first attempts included) and the caller took whichever reply came first, which could
   * be a second run's answer computed from the first run's intermediate state (review R2-F2: "payment already
   * IN_PROGRESS" while the first owner was charging).
   */
  private subscribePartition(kind: string, p: number, handler: ServeHandler): Subscription {
    const subject = partitionSubject(kind, p);
    return this.nc.subscribe(subject, {
      queue: subject,
      callback: (err, msg) => {
        if (err || !msg.reply) return;
        // After a pause our view may be stale: we serve nothing until it is current again. In a queue group nobody
        // else gets this message, so silence would cost the caller a whole attempt timeout: answer the retryable
        // actor_unavailable instead (checkPause has dropped our subscriptions, so the retry goes to another owner,
        // or finds no responder until we are back).
        if (this.checkPause()) {
          respondSafely(msg, unavailable(UNAVAILABLE_TEXT));
          return;
        }
        // A message routed to us before our UNSUB reached the server, for a partition that has moved away (or
        // after close() has left the bucket): the new owner runs it. Running it here would re-create an
        // activation that rebalance() just dropped, so the caller is told to retry, at once rather than after its
        // attempt timeout.
        if (this.closed || !this.subs.get(kind)?.has(p)) {
          respondSafely(msg, unavailable(UNAVAILABLE_TEXT));
          return;
        }
        let env: RequestEnvelope;
        let expires: number;
        try {
          const wire = JSON.parse(dec.decode(msg.data)) as WireRequest;
          // Nobody waits for this attempt's reply after `waitMs` (the caller has retried by then), so a turn that
          // has not started by then is refused rather than run late: measured on our own clock from receipt,
          // this is what keeps a message that sat in a frozen or overloaded host from being applied long after
          // the write moved on (and outside the actor's dedupe window).
          expires = Math.min(wire.deadline, Date.now() + 60_000) + 1000;
          if (typeof wire.waitMs === "number") wire.deadline = Math.min(wire.deadline, Date.now() + wire.waitMs);
          delete wire.waitMs;
          // the caller's request id names this turn's log lines: only a sane token from another process's envelope
          if (wire.requestId !== undefined && !isRequestId(wire.requestId)) delete wire.requestId;
          env = wire;
        } catch {
          respondSafely(msg, JSON.stringify({ ok: false, error: { code: "INVALID_ARGUMENT", message: "unreadable envelope" } }));
          return;
        }
        this.handleOnce(env, expires, handler).then(
          (json) => respondSafely(msg, this.fitReply(env, subject, json)),
          (e) => {
            this.log.error("serve handler threw", { subject, ...(env.requestId ? { requestId: env.requestId } : {}), error: e as Error });
            respondSafely(msg, JSON.stringify({ ok: false, error: { code: "internal_error", message: "internal error" } }));
          },
        );
      },
    });
  }

  /**
   * A reply above the server's max_payload cannot be sent, and a retry would get the same one (handleOnce): the caller
   * waited its whole deadline for it. It gets a non-retryable internal_error at once instead (the turn is done).
   */
  private fitReply(env: RequestEnvelope, subject: string, json: string): string {
    const limit = this.nc.info?.max_payload;
    if (limit === undefined || json.length * 3 <= limit) return json; // at most 3 bytes per UTF-16 unit
    const bytes = Buffer.byteLength(json);
    if (bytes <= limit) return json;
    this.log.error("actor reply over the NATS max_payload", { kind: env.kind, type: env.type, subject, bytes, maxPayload: limit, ...(env.requestId ? { requestId: env.requestId } : {}) });
    return JSON.stringify({ ok: false, error: { code: "internal_error", message: "internal error" } });
  }

  /**
   * A reply lost on the way back (our NATS node died, a reconnect, a reply later than the caller's attempt
   * timeout) makes the caller retry the same msgId, usually to this same host. The actor's own dedupe keeps only
   * its last 32 replies, which a busy actor cycles through in well under a second; so each host also remembers
   * the replies it sent, by msgId, until the caller's deadline has passed, and answers a retry from here (or
   * joins the attempt still running). `actor_unavailable` replies are not kept: those must run again.
   */
  private handleOnce(env: RequestEnvelope, expires: number, handler: ServeHandler): Promise<string> {
    const hit = this.replies.get(env.msgId);
    if (hit) return hit.json !== undefined ? Promise.resolve(hit.json) : hit.pending!;
    // kept as the encoded reply once known: one string per entry is cheap for the GC at tens of thousands/s
    const entry: RememberedReply = { expires };
    const pending = Promise.resolve(handler(env)).then(
      (r) => {
        const json = JSON.stringify(r);
        if (!r.ok && r.error.code === "actor_unavailable") {
          if (this.replies.get(env.msgId) === entry) this.replies.delete(env.msgId);
        } else {
          entry.json = json;
          entry.pending = undefined;
        }
        return json;
      },
      (err) => {
        if (this.replies.get(env.msgId) === entry) this.replies.delete(env.msgId);
        throw err;
      },
    );
    entry.pending = pending;
    this.replies.set(env.msgId, entry);
    this.replyOrder.push([env.msgId, entry]);
    return pending;
  }

  /** Oldest first (arrival order), stopping at the first entry still needed: a sweep costs what it frees. */
  private sweepReplies(): void {
    const now = Date.now();
    const order = this.replyOrder;
    let head = this.replyHead;
    while (head < order.length) {
      const [id, e] = order[head];
      if (e.expires >= now && this.replies.size <= MAX_REMEMBERED_REPLIES) break;
      if (this.replies.get(id) === e) this.replies.delete(id);
      head++;
    }
    if (head > 4096 && head * 2 > order.length) {
      order.splice(0, head);
      head = 0;
    }
    this.replyHead = head;
  }

  // ------------------------------------------------------------------------------------------------ events

  async publish(topic: string, event: unknown): Promise<void> {
    if (this.closed) return;
    this.nc.publish(EVENTS_PREFIX + topic, JSON.stringify(event));
  }

  subscribe(topic: string, handler: EventHandler): () => void {
    const sub = this.nc.subscribe(EVENTS_PREFIX + topic, {
      callback: (err, msg) => {
        if (err) return;
        let event: unknown;
        try {
          event = JSON.parse(dec.decode(msg.data));
        } catch {
          return;
        }
        Promise.resolve()
          .then(() => handler(event))
          .catch((e) => this.log.warn("event handler failed", { topic, error: e as Error }));
      },
    });
    this.eventSubs.add(sub);
    return () => {
      this.eventSubs.delete(sub);
      sub.unsubscribe();
    };
  }

  private ensureEventsStream(): Promise<void> {
    this.eventsStreamReady ??= (async () => {
      const jsm = await jetstreamManager(this.nc);
      const name = this.opts.eventsStream ?? "ACTOR_EVENTS";
      const cfg = { name, subjects: [`${EVENTS_PREFIX}>`], max_age: 7 * 24 * 3600 * 1_000_000_000, num_replicas: this.opts.replicas ?? 3 };
      try {
        await jsm.streams.info(name);
        return;
      } catch {
        // not there yet
      }
      try {
        await jsm.streams.add(cfg);
      } catch (err) {
        if (cfg.num_replicas > 1 && /replica|clustered|insufficient resources/i.test(String((err as Error)?.message))) {
          await jsm.streams.add({ ...cfg, num_replicas: 1 });
        } else {
          await jsm.streams.info(name); // someone else created it meanwhile; anything else rethrows
        }
      }
    })().catch((err) => {
      this.eventsStreamReady = undefined;
      throw err;
    });
    return this.eventsStreamReady;
  }

  /**
   * At-least-once events for a named consumer (the search indexer): a JetStream stream captures `events.>`
   * (created on first use), and `durableName` remembers what was acknowledged, so an event published while
   * the subscriber was down is delivered when it comes back. The handler must be idempotent; a handler that
   * throws gets the event again after a short delay. Resolves with a function that stops consuming (the
   * durable position is kept). Events published before the stream first existed are not captured.
   */
  async subscribeDurable(topic: string, durableName: string, handler: EventHandler): Promise<() => Promise<void>> {
    await this.ensureEventsStream();
    const stream = this.opts.eventsStream ?? "ACTOR_EVENTS";
    const jsm = await jetstreamManager(this.nc);
    try {
      await jsm.consumers.info(stream, durableName);
    } catch {
      await jsm.consumers.add(stream, {
        durable_name: durableName,
        filter_subject: EVENTS_PREFIX + topic,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: 30_000_000_000,
      });
    }
    const consumer = await jetstream(this.nc).consumers.get(stream, durableName);
    const messages = await consumer.consume({ max_messages: 256 });
    this.durables.add(messages);
    const done = (async () => {
      for await (const m of messages) {
        try {
          await handler(m.json());
          m.ack();
        } catch (err) {
          this.log.warn("durable event handler failed; redelivering", { topic, durableName, error: err as Error });
          m.nak(1000);
        }
      }
    })();
    return async () => {
      this.durables.delete(messages);
      await messages.close().catch(() => {});
      await done.catch(() => {});
    };
  }

  // ------------------------------------------------------------------------------------------------ lifecycle

  /**
   * Leaves the membership bucket first (the others take our partitions at once), then drains the connection. The
   * partition subscriptions stay until the drain: a message routed to us meanwhile, or before the server processed
   * our UNSUB, is answered with the retryable actor_unavailable (the callback sees `closed`), where unsubscribing
   * first dropped it and its caller waited a whole attempt timeout (review R4-F2). No wait for the others' views is
   * needed: until they subscribe, a retry finds us (answered at once) or no responder (also at once).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.ticker);
    for (const state of this.acquiring.values()) state.cancelled = true;
    this.acquiring.clear();
    for (const s of this.eventSubs) s.unsubscribe();
    for (const d of this.durables) await d.close().catch(() => {});
    await this.joining?.catch(() => {});
    await this.membership?.stop(true);
    await this.nc.drain().catch(() => this.nc.close());
    this.subs.clear();
  }
}

/** nats.js refuses a publish above the server's max_payload with an InvalidArgumentError saying so. */
function isMaxPayload(err: unknown): boolean {
  return /max_payload/i.test(String((err as { message?: unknown } | null)?.message ?? ""));
}

/** nats.js: no responders is a RequestError caused by NoRespondersError (name "NoResponders"), a timeout a TimeoutError. */
function noAnswerReason(err: unknown): NoAnswerReason {
  const e = err as { name?: unknown; cause?: { name?: unknown } } | null;
  if (e?.name === "TimeoutError") return "timeout";
  if (e?.name === "NoResponders" || e?.cause?.name === "NoResponders") return "no_responders";
  return "transport_error";
}
