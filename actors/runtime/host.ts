/**
 * An actor host: activates actors on their first message, runs one turn at a time per activation (a mailbox
 * that never interleaves two messages at an `await`), commits each turn's durable writes and state (fenced by
 * version) before replying, deduplicates retried writes by message id, passivates idle activations and fires
 * durable reminders.
 */
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import type { TSchema } from "@sinclair/typebox";
import { isDatabaseUnavailable, isNeverSent, withoutDeadline, type Sql } from "../../infra/db.ts";
import { LoopBackoff } from "../../infra/backoff.ts";
import { currentRequestId, inRequest, log as rootLog, type Logger } from "../../infra/log.ts";
import { actorFencingConflicts, actorLockConflicts, LOCK_CONFLICT_SQLSTATES, recordTurn, registerActorStats, showConflictSeries, turnStatsFor, type TurnStats } from "../../infra/metrics.ts";
import type { Transport } from "../transport/transport.ts";
import { systemClock, type Clock } from "./clock.ts";
import type { ActorCaller, ActorContext, AnyActorDefinition, CallOptions, MessageBody, MessageType, ReplyOf } from "./define-actor.ts";
import { REMINDER_PREFIX, type ReplyEnvelope, type RequestEnvelope } from "./envelope.ts";
import { ActorError, isInputDataError } from "./errors.ts";
import { LeftoverMarkers, type LeftoverMarker } from "./leftover-markers.ts";
import { UNAVAILABLE_TEXT } from "./unavailable-text.ts";
import { isDuplicateReply, isFenceFailure, ridingStatement, stateWriteStatement, WRITE_REFUSED, type ReminderOp, type RidingWrite, type StateWrite } from "./state-write.ts";

/** Replies an activation remembers in memory (resends to a live activation answer without a query). */
const RECENT_REPLIES = 256;
/** How long after the caller's deadline a reply stays in actor_inbox (clock skew between hosts). */
const INBOX_MARGIN_MS = 120_000;
/** How often a host deletes expired inbox rows. */
const INBOX_SWEEP_MS = 60_000;
/** A claimed reminder is pushed this far into the future so no other host fires it while it runs. */
const REMINDER_LEASE_MS = 60_000;

/**
 * What a hand-over was given before a stop went on without it (2 s), in hosts older than the release handshake: the
 * last catch-up is timed from it, since it is for partitions such a host hands over (`startBackstop`). A hand-over here
 * runs until it is written or has failed, and is waited for (`handOver`, `handOversDone`).
 */
const HAND_OVER_MS = 2_000;
/**
 * The timed backstop (`startBackstop`), for a moved partition whose previous owner's hand-over may land after this
 * host loads: how long after such a move a new activation of a kind with a catch-up waits before it loads. The
 * previous owner starts its hand-over when it sees the same change and usually has it written within milliseconds, so
 * the load finds it, rather than admitting from the older row until a catch-up corrects it (review RQ MED-1). Not over
 * NATS between hosts that answer releases: there a moved partition of such a kind is served only once every other
 * live host has released it, its hand-over written (actors/transport/nats.ts `acquire`), so nothing can land after the
 * load and the hold only delayed the first requests of every new activation by up to 0.5 s after each change. It runs
 * when the transport serves a partition without that guarantee (`placementChanged(false)`: a live host, or one that
 * just left, that does not answer releases, i.e. an older version during a rolling upgrade; or a host that stopped
 * being live without leaving in the last TTL, i.e. a paused or cut-off process that hands over when it resumes, or a
 * killed one; review X-2) and over a transport that has no handshake (`releasesPartitions`;
 * test/helpers/lossy-transport.ts). Never in-process (lossless): one host serves everything, and the previous run's
 * stop hand-over committed before this one started. A paused host's hand-over is folded in only if it lands before
 * the last re-read (CATCH_UP_AT_MS), i.e. a pause up to about TTL + 3 s; after a longer one the two hand-overs are
 * max-merged (docs/access.md).
 */
const PLACEMENT_HOLD_MS = 500;
/**
 * When, after such a move, this host re-reads what its new activations loaded (the kinds' catch-ups), for a hand-over
 * that landed later (an older host bounds it by HAND_OVER_MS; the last read leaves a second's margin for the two
 * hosts seeing the change at slightly different times). Each read folds in only what changed since the one before
 * (BucketTable.merge).
 */
const CATCH_UP_AT_MS = [1_000, HAND_OVER_MS + 1_000];
const CATCH_UP_AFTER_MS = CATCH_UP_AT_MS[CATCH_UP_AT_MS.length - 1]!;
/** The 503 of a message type this host does not know: a sender newer than the host, mid-upgrade (see `receive`). */
const UPGRADE_TEXT = "This part of the service is being upgraded; retry shortly.";

/**
 * A kind's hand-over: what its activations keep only in `ctx.memory` and the next activation should not lose (the
 * rate-limit buckets, actors/ip/stored-buckets.ts). Called with the kind's activations that are dropped while their
 * host runs: by `stop()` (a clean stop), after their turns finished and while this host still owns their partitions
 * (the transport leaves after `stop()`, which waits until the hand-over is written or has failed, however long that
 * takes), so the next owner's activation finds what it wrote; from the moment it takes its snapshot the stopping host
 * answers that kind's messages actor_unavailable (the caller retries, and reaches the next owner once this host has
 * left), so nothing is counted after the snapshot. By `deactivate` (partitions moving to a host that joined: a
 * restarted host rejoining, a scale-out), not awaited here: over NATS the new owner serves the partition only once
 * this host has answered its release, which waits for these writes (`handOversDone`, actors/transport/nats.ts
 * `acquire`). And by idle passivation (`passivateIdle`), which drops them only once it is written, so waiting out
 * ACTOR_IDLE_MS loses nothing. It should stop writing at `deadline` (epoch ms; ActorHost passes Infinity). A
 * failed write is logged, and its counts are lost as on a kill. Nothing runs on a kill, of course.
 */
export type HandOver = (activations: readonly { id: string; memory: ReadonlyMap<string, unknown> }[], sql: Sql, deadline: number) => Promise<void>;
const handOvers = new Map<string, HandOver>();

/**
 * A kind's catch-up: the other half of a hand-over over a partition move that no release handshake covered (see
 * PLACEMENT_HOLD_MS). Called at each of CATCH_UP_AT_MS after such a move, with the kind's activations this host
 * started since (they may have loaded before the previous owner's hand-over committed): it reads what was handed over
 * and folds in what is new.
 */
export type CatchUp = (activations: readonly { id: string; memory: Map<string, unknown> }[], sql: Sql) => Promise<void>;
const catchUps = new Map<string, CatchUp>();

/** Registers `kind`'s hand-over and its catch-up (at module load, next to the kind's definition). */
export function handOverOnStop(kind: string, handOver: HandOver, catchUp?: CatchUp): void {
  handOvers.set(kind, handOver);
  if (catchUp) catchUps.set(kind, catchUp);
}

const placementListeners = new Set<() => void>();

/**
 * Calls `listener` whenever a host of this process may have gained partitions (its start, a change of the live
 * hosts it sees, a deactivation): from then on rows another host handed over may exist for any of its actors
 * (actors/ip/stored-buckets.ts decides from this when an activation's load can be skipped).
 */
export function onPlacementChange(listener: () => void): void {
  placementListeners.add(listener);
}

interface Pending {
  env: RequestEnvelope;
  resolve: (r: ReplyEnvelope | Promise<ReplyEnvelope>) => void;
}

class Activation {
  state: unknown;
  /**
   * `JSON.stringify(state)` as of the last write turn's successful end, while nothing can have changed `state` since:
   * the next turn starts from it instead of printing the state again (the cart's ~1.8 kB, once per turn). Set only
   * there (the text the turn wrote, or found unchanged); a turn's start, a load and every read-only turn clear it (a
   * reentrant handler may change `state`), and so does a failed turn (restored from its snapshot, printed anew).
   */
  stateJson: string | undefined = undefined;
  version = 0;
  /** msgId → reply of recent state-changing turns (memory only; actor_inbox is the durable record). */
  readonly recent = new Map<string, ReplyEnvelope>();
  readonly memory = new Map<string, unknown>();
  queue: Pending[] = [];
  running = false;
  stale = false;
  /** Dropped by `deactivate` (its partition moved away): read-only messages still waiting for its load go elsewhere. */
  dropped = false;
  /**
   * Activated by a message of `def.createdBy` without reading actor_state: the id is presumed new until a turn's
   * fenced insert proves it (or, for a turn that writes nothing, a read before its reply).
   */
  presumedNew = false;
  lastUsed = Date.now();
  ready!: Promise<void>;
  /** True once `ready` has resolved: read-only turns then run at once, without a promise hop. */
  loaded = false;
  /** The logger of read-only turns (built on first use: most turns never log). */
  logger?: Logger;
  constructor(
    readonly def: AnyActorDefinition,
    readonly id: string,
  ) {}
}

class StaleVersion extends Error {}

/**
 * The actor's state was checkpointed by a turn that may still be running (on another host, or on an activation of
 * this one that ownership moved away from): actor_inbox holds a live pending marker. Its state is not loaded until
 * the marker is replaced by that turn's reply, deleted by its failure, expires, or its host leaves the membership.
 * `host`: the marker's host, for the log only (host names and pids are not the API client's business).
 */
class BusyElsewhere extends Error {
  constructor(readonly host: string) {
    super("an earlier request is still being processed");
  }
}

/** What the caller of an actor held back by a live pending marker reads (the same whatever host holds it). */
const BUSY_MESSAGE = "An earlier request for this resource is still being processed; retry shortly.";

/**
 * The host part of a pending marker's token (`<host id>/<random>`, see Turn), or undefined for a token without one
 * (a marker written before markers named their host: its time alone decides).
 */
function markerHost(token: string): string | undefined {
  const slash = token.lastIndexOf("/");
  return slash > 0 ? token.slice(0, slash) : undefined;
}

/**
 * The turn's write was refused because actor_inbox already holds a reply for its message: another activation (over
 * NATS, the other owner while a partition moved, which an earlier attempt of the message reached) applied it first.
 * Or it holds another run's pending marker that has not expired: that run may still answer (the caller retries).
 */
class AlreadyApplied extends Error {}

interface MessageEntry {
  check: TypeCheck<TSchema>;
  /** Listed in the definition's `reentrant`. */
  readOnly: boolean;
  handler: (ctx: never, body: unknown) => unknown;
}

interface KindEntry {
  def: AnyActorDefinition;
  messages: Map<string, MessageEntry>;
  activations: Map<string, Activation>;
}

/** Per-kind turn counters (plain numbers, handed to prom-client at scrape time: infra/metrics.ts). */
const statsByKind = new Map<string, TurnStats>();
function recordTurnOf(kind: string, outcome: string, seconds: number): void {
  let s = statsByKind.get(kind);
  if (!s) statsByKind.set(kind, (s = turnStatsFor(kind)));
  recordTurn(s, outcome, seconds);
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function";
}

export interface HostOptions {
  transport: Transport;
  sql: Sql;
  definitions: AnyActorDefinition[];
  caller: ActorCaller;
  clock?: Clock;
  /**
   * This host's own clock, the one callers state their deadlines in (default: the system clock). Apart from `clock`,
   * the business time handlers read, which a test may move by hours. Only differences of it reach the database (a
   * reply's or marker's time left), so its skew from Postgres's clock does not matter (tests give it one).
   */
  wallClock?: Clock;
  log?: Logger;
  idleMs?: number;
  reminderPollMs?: number;
}

export class ActorHost {
  private readonly defs = new Map<string, AnyActorDefinition>();
  /**
   * Per kind: its messages (compiled schema check, read-only or not) and its activations by id. One lookup per
   * level on every message, and no "kind/id" key string built per message.
   */
  private readonly kinds = new Map<string, KindEntry>();
  private readonly clock: Clock;
  private readonly wallClock: Clock;
  private readonly log: Logger;
  private sweepTimer?: ReturnType<typeof setInterval>;
  private reminderTimer?: ReturnType<typeof setTimeout>;
  private unregisterStats?: () => void;
  private stopping = false;
  /** `stop()` has taken its hand-over snapshot: the kinds with a hand-over answer actor_unavailable from then on. */
  private handedOver = false;
  /** Activations of kinds with a catch-up started since the timed backstop last started, until `catchUpUntil`. */
  private catchUpBatch: Activation[] = [];
  private catchUpUntil = 0;
  /** New activations of kinds with a catch-up load no earlier than this (PLACEMENT_HOLD_MS after `startBackstop`). */
  private holdUntil = 0;
  private catchUpTimers: ReturnType<typeof setTimeout>[] = [];
  /** Hand-over writes under way (`handOver`): a release of a partition (`handOversDone`) waits for them. */
  private readonly handingOver = new Set<Promise<void>>();
  /** The live hosts as this host last saw them (NATS; joined), to notice a placement change. */
  private seenHosts?: string;
  private polling?: Promise<number>;
  private readonly readOnlyDeps: ReadOnlyDeps;
  /** Tokens of the pending markers this process's running turns may have written (see markerIsLive). */
  private readonly runningMarkers = new Set<string>();
  /** Markers of failed turns whose delete the database did not answer: deleted once it does (leftover-markers.ts). */
  private readonly leftovers: LeftoverMarkers;

  constructor(private readonly opts: HostOptions) {
    this.clock = opts.clock ?? systemClock;
    this.wallClock = opts.wallClock ?? systemClock;
    this.log = opts.log ?? rootLog.child({ component: "actor-host" });
    this.readOnlyDeps = { sql: opts.sql, clock: this.clock, log: this.log, caller: opts.caller };
    this.leftovers = new LeftoverMarkers(opts.sql, this.log, this.wallClock);
    for (const def of opts.definitions) {
      this.defs.set(def.kind, def);
      const messages = new Map<string, MessageEntry>();
      const readOnly = new Set<string>(def.reentrant ?? []);
      for (const [type, schema] of Object.entries(def.messages)) {
        messages.set(type, { check: TypeCompiler.Compile(schema as TSchema), readOnly: readOnly.has(type), handler: def.handlers[type] });
      }
      this.kinds.set(def.kind, { def, messages, activations: new Map() });
    }
  }

  async start(): Promise<void> {
    this.handedOver = false;
    this.notePlacement();
    for (const kind of this.defs.keys()) {
      await this.opts.transport.serve(kind, (env) => this.receive(env));
      showConflictSeries(kind);
    }
    const idle = this.opts.idleMs ?? 5 * 60_000;
    this.sweepTimer = setInterval(() => void this.passivateIdle(idle), Math.max(50, Math.floor(idle / 2)));
    this.unregisterStats = registerActorStats({
      activationCounts: () => this.countBy(() => 1),
      mailboxDepths: () => this.countBy((a) => a.queue.length),
    });
    const pollMs = this.opts.reminderPollMs ?? 1000;
    if (pollMs > 0) this.scheduleReminderPoll(pollMs);
  }

  /**
   * Finishes queued turns, runs the kinds' hand-overs (what lives in memory only), then drops every activation
   * (their state is already durable).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweepTimer);
    clearTimeout(this.reminderTimer);
    this.leftovers.stop();
    await this.polling?.catch(() => {}); // its failure was already reported by the loop
    const deadline = Date.now() + 5000;
    while ([...this.allActivations()].some(([, , a]) => a.running || a.queue.length) && Date.now() < deadline) {
      await Bun.sleep(5);
    }
    for (const t of this.catchUpTimers) clearTimeout(t);
    // the snapshot is taken synchronously by the hand-overs' first step: nothing of these kinds is served after it
    this.handedOver = true;
    // A read-only message still waiting for its activation's load (or the placement hold) is in no queue and no snapshot:
    // answered after the snapshot it would count what nobody hands over (review RF-1). It is answered
    // actor_unavailable instead, and the caller's retry reaches the next owner.
    for (const [, , a] of this.allActivations()) if (!a.loaded) a.dropped = true;
    // Until it is written or has failed, however long: the transport leaves the membership after this, and only then
    // do the other hosts take these partitions and load (a 2 s cut-off let a slow write land after their load: lost).
    await this.handOver([...this.allActivations()].map(([, , a]) => a).filter((a) => a.loaded && !a.stale));
    for (const k of this.kinds.values()) k.activations.clear();
    this.unregisterStats?.();
  }

  /**
   * Runs the registered hand-overs of these activations' kinds, together, every chunk however long it takes; resolves
   * once they are written (or failed: logged). Tracked meanwhile for `handOversDone`.
   */
  private async handOver(activations: readonly Activation[]): Promise<void> {
    const deadline = Infinity;
    const byKind = new Map<string, { id: string; memory: Map<string, unknown> }[]>();
    for (const a of activations) {
      if (!handOvers.has(a.def.kind)) continue;
      const list = byKind.get(a.def.kind);
      if (list) list.push({ id: a.id, memory: a.memory });
      else byKind.set(a.def.kind, [{ id: a.id, memory: a.memory }]);
    }
    if (byKind.size === 0) return;
    const work = [...byKind].map(([kind, list]) =>
      handOvers.get(kind)!(list, this.opts.sql, deadline).catch((err) => this.log.warn("an actor kind's hand-over failed", { kind, error: err as Error })),
    );
    const all = Promise.all(work).then(() => {});
    this.handingOver.add(all);
    void all.then(() => this.handingOver.delete(all));
    await all;
  }

  /** Whether `kind` registered a hand-over (the transport releases its partitions only once it is written). */
  handsOver(kind: string): boolean {
    return handOvers.has(kind);
  }

  /**
   * Resolves once every hand-over under way has been written (or has failed): what a release of a partition waits for
   * (actors/transport/nats.ts), after its activations were deactivated.
   */
  async handOversDone(): Promise<void> {
    while (this.handingOver.size) await Promise.all(this.handingOver);
  }

  /**
   * The transport now serves a moved partition of a kind with a hand-over: rows its old owners wrote may exist
   * (actors/ip/stored-buckets.ts measures them again). `released`: every host that may have served it released it,
   * its hand-over written (actors/transport/nats.ts `acquire`), so the loads here find it. Else (a host that does not
   * answer releases, mid-upgrade, or one that expired without leaving, e.g. a paused process) what it hands over may
   * land after them: the timed backstop runs.
   */
  placementChanged(released = true): void {
    for (const listener of placementListeners) listener();
    if (!released) this.startBackstop();
  }

  /** Drops activations matching `pred` (the NATS transport calls this when partitions move away), handing them over. */
  deactivate(pred: (kind: string, id: string) => boolean): void {
    const moved: Activation[] = [];
    for (const [map, key, a] of this.allActivations()) {
      if (!pred(a.def.kind, a.id)) continue;
      a.dropped = true;
      if (a.loaded) moved.push(a);
      if (!a.running && a.queue.length === 0) map.delete(key);
      else a.stale = true;
    }
    // every chunk, however long it takes: the new owner waits for it (handOversDone) before it serves the partition
    if (moved.length) void this.handOver(moved);
    // after a pause the transport drops everything here and takes partitions back later: what others handed over
    // meanwhile must be read again
    this.notePlacement();
  }

  /**
   * Partitions may have moved (this host started, the live hosts changed, or it deactivated some): rows handed over
   * elsewhere may exist. Over a lossy transport without the release handshake the timed backstop runs too; over NATS
   * the transport says per moved partition whether it is needed (`placementChanged`).
   */
  private notePlacement(): void {
    for (const listener of placementListeners) listener();
    if (this.opts.transport.lossless || (this.opts.transport as { releasesPartitions?: boolean }).releasesPartitions === true) return;
    this.startBackstop();
  }

  /**
   * The timed backstop of a move no release covered (see PLACEMENT_HOLD_MS): for CATCH_UP_AFTER_MS the new activations
   * of kinds with a catch-up are collected, each waits out the rest of the hold before it loads, and they are caught up
   * together at each of CATCH_UP_AT_MS.
   */
  private startBackstop(): void {
    if (this.opts.transport.lossless || this.stopping) return;
    this.catchUpUntil = Date.now() + CATCH_UP_AFTER_MS;
    this.holdUntil = Date.now() + PLACEMENT_HOLD_MS;
    for (const t of this.catchUpTimers) clearTimeout(t);
    this.catchUpTimers = CATCH_UP_AT_MS.map((ms) => setTimeout(() => void this.catchUp(ms === CATCH_UP_AFTER_MS), ms));
  }

  /**
   * A new activation of a kind with a catch-up (before its load starts): notices a change of the live hosts, joins the
   * batch while a timed backstop runs, and returns how long its load waits (the rest of PLACEMENT_HOLD_MS; 0 if none).
   */
  private watchPlacement(act: Activation): number {
    if (this.opts.transport.lossless) return 0;
    const live = (this.opts.transport as { liveHosts?: () => string[] }).liveHosts?.().join(",");
    if (live !== this.seenHosts) {
      this.seenHosts = live;
      this.notePlacement();
    }
    const now = Date.now();
    if (now < this.catchUpUntil) this.catchUpBatch.push(act);
    // never longer than the hold itself: a wall clock stepped back must not stall every new activation (review RF-2)
    return Math.min(PLACEMENT_HOLD_MS, this.holdUntil - now);
  }

  /** Runs the kinds' catch-ups for the batch's activations that are still here and loaded; the last one ends the batch. */
  private async catchUp(last: boolean): Promise<void> {
    const batch = this.catchUpBatch;
    if (last) this.catchUpBatch = [];
    if (this.stopping) return;
    const byKind = new Map<string, { id: string; memory: Map<string, unknown> }[]>();
    for (const a of batch) {
      if (!a.loaded || a.stale || this.kinds.get(a.def.kind)?.activations.get(a.id) !== a) continue;
      const list = byKind.get(a.def.kind);
      if (list) list.push({ id: a.id, memory: a.memory });
      else byKind.set(a.def.kind, [{ id: a.id, memory: a.memory }]);
    }
    await Promise.all(
      [...byKind].map(([kind, list]) =>
        catchUps.get(kind)!(list, this.opts.sql).catch((err) => this.log.warn("an actor kind's catch-up after a partition move failed", { kind, error: err as Error })),
      ),
    );
  }

  activationCount(kind?: string): number {
    let n = 0;
    for (const [, , a] of this.allActivations()) if (!kind || a.def.kind === kind) n++;
    return n;
  }

  /** Every activation with the map that holds it and its key there (safe to delete from while iterating). */
  private *allActivations(): Generator<[Map<string, Activation>, string, Activation]> {
    for (const k of this.kinds.values()) for (const [id, a] of k.activations) yield [k.activations, id, a];
  }

  private countBy(f: (a: Activation) => number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const kind of this.defs.keys()) out[kind] = 0;
    for (const [, , a] of this.allActivations()) out[a.def.kind] = (out[a.def.kind] ?? 0) + f(a);
    return out;
  }

  dispatch(env: RequestEnvelope): Promise<ReplyEnvelope> {
    const r = this.receive(env);
    return r instanceof Promise ? r : Promise.resolve(r);
  }

  /**
   * `dispatch` as the transport calls it: a reply that is ready at once (a refused envelope, a read-only turn of a
   * loaded activation whose handler returned without awaiting) comes back as a value, not a promise.
   */
  receive(env: RequestEnvelope): ReplyEnvelope | Promise<ReplyEnvelope> {
    // The turn runs in the scope of the request its message serves (none for a reminder): every line it writes, the
    // host's and its handler's through any logger, names the request, and so do the messages it sends. A message
    // sent from that very scope (the in-process bus answering the gateway at once, e.g. `authorize`) enters nothing.
    if (env.requestId !== currentRequestId()) return inRequest(env.requestId, () => this.receive(env));
    const kind = this.kinds.get(env.kind);
    if (!kind) {
      this.log.error("message for an actor kind this host does not serve", { kind: env.kind, type: env.type });
      return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
    }
    // a stopping host past its hand-over snapshot: a unit counted now would be lost; the caller retries and reaches
    // the next owner once this host has left
    if (this.handedOver && handOvers.has(env.kind)) return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
    // The envelope's own fields decide where a turn's reply is kept and for how long: refuse what is not a time and
    // an attempt number (an envelope from NATS is only as well-formed as its sender) before any turn starts.
    if (!Number.isFinite(env.deadline) || !Number.isSafeInteger(env.attempt) || env.attempt < 1 || typeof env.msgId !== "string" || env.msgId === "") {
      return errorReply(new ActorError("INVALID_ARGUMENT", `malformed envelope for ${env.kind}.${env.type}: msgId, deadline and attempt are required`));
    }
    const isReminder = env.type.startsWith(REMINDER_PREFIX);
    let readOnly: MessageEntry | undefined;
    if (!isReminder) {
      const msg = kind.messages.get(env.type);
      if (!msg) {
        // A sender newer than this host (a rolling upgrade that reached the gateways first: docs/operations.md). Not the
        // caller's fault and not for its eyes: a retryable 503 with a fixed text; the names go to the log.
        this.log.error("message type this host does not know (a newer sender during an upgrade?)", { kind: env.kind, type: env.type });
        return errorReply(new ActorError("service_unavailable", UPGRADE_TEXT));
      }
      if (!msg.check.Check(env.body)) {
        const first = msg.check.Errors(env.body).First();
        return errorReply(new ActorError("INVALID_ARGUMENT", `invalid ${env.kind}.${env.type} message: ${first?.message ?? "schema"}`, { field: first?.path }));
      }
      if (msg.readOnly) readOnly = msg;
    }
    const def = kind.def;
    let act = kind.activations.get(env.id);
    if (!act || act.stale) {
      act = new Activation(def, env.id);
      // only a first send: a resend (attempt > 1), e.g. after a fencing conflict of a presumed-new id, reads
      act.presumedNew = !isReminder && env.attempt === 1 && !!def.createdBy?.includes(env.type);
      const a = act;
      // partitions that may just have moved here: the previous owner's hand-over first (see PLACEMENT_HOLD_MS)
      const hold = catchUps.has(def.kind) ? this.watchPlacement(act) : 0;
      act.ready = (hold > 0 ? Bun.sleep(hold).then(() => this.load(a)) : this.load(act)).then(() => {
        a.loaded = true;
      });
      kind.activations.set(env.id, act);
    }
    if (readOnly) {
      // read-only: no snapshot, no write, no wait behind the mailbox (see ActorDefinition.reentrant)
      if (act.loaded && !act.presumedNew) return this.runReadOnly(act, env, readOnly.handler);
      const a = act;
      const handler = readOnly.handler;
      return a.ready.then(
        // its partition moved away during the load (e.g. a joining host that briefly saw itself alone): run here, the
        // turn would count on an activation that nobody hands over; the caller retries and reaches the owner
        () => (a.dropped ? errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT)) : this.runReadOnlyOnceSettled(a, env, handler)),
        (err: unknown) => this.activationFailed(kind.activations, a, err, env.attempt),
      );
    }
    return new Promise((resolve) => {
      act!.queue.push({ env, resolve });
      if (!act!.running) void this.drain(act!);
    });
  }

  private async drain(act: Activation): Promise<void> {
    act.running = true;
    try {
      try {
        await act.ready;
      } catch (err) {
        const activations = this.kinds.get(act.def.kind)!.activations;
        for (const p of act.queue.splice(0)) p.resolve(inRequest(p.env.requestId, () => this.activationFailed(activations, act, err, p.env.attempt)));
        return;
      }
      while (act.queue.length) {
        const p = act.queue.shift()!;
        if (act.stale) {
          // ownership moved or a fencing conflict: hand the message to a fresh activation that reloads state
          // It may have reached the other owner too and been applied there meanwhile: as a resend (attempt > 1) it
          // looks its reply up in actor_inbox before the handler runs again.
          p.resolve(this.receive(p.env.attempt > 1 ? p.env : { ...p.env, attempt: 2 }));
          continue;
        }
        // runTurn maps every failure of a turn to a reply; should anything still escape, this message's caller gets
        // an error and the messages queued behind it still run (an escaped rejection here reached no one: it was an
        // unhandled rejection, which ends a Bun process, and left the mailbox stalled)
        // Each turn in its own message's request scope: the mailbox runs in the scope of the message that started it.
        const env = p.env;
        p.resolve(await inRequest(env.requestId, () => this.runTurn(act, env).catch((err: unknown) => this.errorFor(act, err))));
      }
    } finally {
      act.running = false;
      act.lastUsed = Date.now();
    }
  }

  /**
   * A failed load (e.g. a transient database error) forgets the activation, so the next message of any kind loads
   * it again, and answers actor_unavailable, which callers retry. Only this activation is forgotten: a newer one
   * that replaced it (stale ownership) stays. A database that cannot be reached answers service_unavailable, as a
   * turn does: the caller's client retried actor_unavailable until its deadline (10 s) against a database that
   * refused every attempt, and the caller got its 503 only then. A connection lost under the load (a failover, a
   * proxy restart, 57P01) is retried once, at once, on another connection; a second failure is the 503 (review R2-F5).
   */
  private activationFailed(activations: Map<string, Activation>, act: Activation, err: unknown, attempt: number): ReplyEnvelope {
    if (activations.get(act.id) === act) activations.delete(act.id);
    // The API client reads fixed texts; the actor, the error and its stack go to the log only.
    const where = { kind: act.def.kind, id: act.id };
    if (isDatabaseUnavailable(err)) {
      const hopeless = isNeverSent(err) || (err as { code?: unknown }).code === "QUERY_DEADLINE" || attempt > 1;
      if (!hopeless) {
        this.log.info("lost the database connection while activating an actor; the caller retries", { ...where, error: err as Error });
        return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
      }
      return errorReply(new ActorError("service_unavailable", "The database is unavailable; retry after 30 seconds."));
    }
    if (err instanceof BusyElsewhere) {
      this.log.info("activation held back by a pending marker; the caller retries", { ...where, markerHost: err.host });
      return errorReply(new ActorError("actor_unavailable", BUSY_MESSAGE));
    }
    if (err instanceof StaleVersion) {
      // onActivate's write lost the race to another activation's (a partition move): routine, the caller retries
      this.log.info("an activation's write was fenced out by another activation; the caller retries", where);
      return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
    }
    // a bug, or a state row onActivate cannot read: every load of this actor fails the same way
    this.log.error("could not activate an actor", { ...where, error: err as Error, stack: (err as Error)?.stack });
    return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
  }

  private async load(act: Activation): Promise<void> {
    act.stateJson = undefined;
    act.state = act.def.initialState(act.id);
    if ((act.def.persistence ?? "durable") === "durable" && !act.presumedNew) {
      // Over a lossy transport a turn of this actor may still be running elsewhere after a mid-turn checkpoint (a
      // partition move): its live marker keeps this activation from loading the half-finished state (and its
      // onActivate from taking the live turn for a dead one, fencing out that turn's real result). The in-process bus
      // has one activation per actor and writes no markers: its load reads the state row alone.
      // A marker whose host left the membership (killed, or cut off from NATS) does not hold the load back: that
      // turn is presumed dead as soon as its partitions are, and onActivate reconciles (a turn in fact still running
      // behind a network partition is fenced out at its final write: docs/operations.md).
      // A marker this host's failed turn left behind (its delete found no database) goes first: the load is about to
      // find the database answering, and the marker would keep holding the actor back on every other host.
      if (this.leftovers.size > 0) await this.leftovers.beforeLoad(act.def.kind, act.id);
      const rows = this.opts.transport.lossless
        ? await this.opts.sql<{ version: number; state: unknown; pending?: string[] | null }[]>`
            SELECT version, state FROM actor_state WHERE kind = ${act.def.kind} AND id = ${act.id}`
        : await this.opts.sql<{ version: number; state: unknown; pending?: string[] | null }[]>`
            SELECT version, state, (SELECT array_agg(pending_turn) FROM actor_inbox i
              WHERE i.kind = ${act.def.kind} AND i.id = ${act.id} AND i.pending_until > now()) AS pending
            FROM actor_state WHERE kind = ${act.def.kind} AND id = ${act.id}`;
      const busy = rows[0]?.pending?.find((token) => this.markerIsLive(token));
      if (busy) {
        throw new BusyElsewhere(markerHost(busy) ?? "?");
      }
      if (rows.length) {
        act.version = Number(rows[0].version);
        act.state = rows[0].state;
      }
    }
    if (act.def.onActivate) {
      const turn = new Turn(this, act, `activate-${act.def.kind}-${act.id}`);
      try {
        await act.def.onActivate(turn.ctx);
      } catch (err) {
        // release the turn's connection and leave nothing half-written; the caller gets actor_unavailable
        await turn.finish(false).catch(() => {});
        throw err;
      }
      await turn.finish(true);
    }
  }

  /**
   * Settles a presumed-new id before a reply that no insert has vouched for: true when the id turned out to exist
   * (the activation is then stale, and the caller's retry reads the row).
   */
  private async presumedNewWasWrong(act: Activation): Promise<boolean> {
    let exists = true;
    try {
      exists = (await this.opts.sql`SELECT 1 FROM actor_state WHERE kind = ${act.def.kind} AND id = ${act.id}`).length > 0;
    } catch {
      // unknown: treat as existing, the retry will read
    }
    if (exists) act.stale = true;
    else act.presumedNew = false;
    return exists;
  }

  private async runReadOnlyOnceSettled(act: Activation, env: RequestEnvelope, handler: MessageEntry["handler"]): Promise<ReplyEnvelope> {
    if (act.presumedNew && (await this.presumedNewWasWrong(act))) return this.notLoadedYet(act);
    return this.runReadOnly(act, env, handler);
  }

  /**
   * A read-only turn: the handler runs at once on a context shared by the activation's read-only turns (only the
   * msgId is the turn's own); a handler that returns without awaiting gets its reply back synchronously.
   */
  private runReadOnly(act: Activation, env: RequestEnvelope, handler: MessageEntry["handler"]): ReplyEnvelope | Promise<ReplyEnvelope> {
    const started = performance.now();
    // its handler may change the state (in memory only): the next write turn prints it anew
    act.stateJson = undefined;
    const ctx = new ReadOnlyContext(act, env.msgId, this.readOnlyDeps);
    let value: unknown;
    try {
      // called on the handlers object, as `def.handlers[type](…)` was (a handler may use `this`)
      value = handler.call(act.def.handlers, ctx as never, env.body);
    } catch (err) {
      return this.endReadOnly(act, this.errorFor(act, err), started);
    }
    if (value instanceof Promise || isThenable(value)) {
      return Promise.resolve(value).then(
        (v) => this.endReadOnly(act, { ok: true, value: v === undefined ? null : v }, started),
        (err) => this.endReadOnly(act, this.errorFor(act, err), started),
      );
    }
    return this.endReadOnly(act, { ok: true, value: value === undefined ? null : value }, started);
  }

  private endReadOnly(act: Activation, reply: ReplyEnvelope, started: number): ReplyEnvelope {
    act.lastUsed = Date.now();
    recordTurnOf(act.def.kind, reply.ok ? "ok" : reply.error.code, (performance.now() - started) / 1000);
    return reply;
  }

  /**
   * Whether the run that wrote a pending marker (its time not passed yet) may still answer: its host is still a member
   * (the membership that decides partition ownership: a host that left it, cleanly or by its heartbeat stopping, has
   * lost its partitions and is presumed dead with its turns). A marker of this very host counts while the turn that
   * wrote it runs in this process (a restarted process with the same host id has no such turn). A transport without
   * a membership, or a token without a host: its time alone decides.
   */
  private markerIsLive(token: string): boolean {
    const hosts = this.opts.transport.hosts;
    const host = markerHost(token);
    if (!hosts || host === undefined) return true;
    if (host === hosts.self) return this.runningMarkers.has(token);
    return hosts.isLive(host);
  }

  /** @internal Turn: a marker token of this process's run is live (to markerIsLive) from before it is sent until the turn ends. */
  trackMarker(token: string, running: boolean): void {
    if (running) this.runningMarkers.add(token);
    else this.runningMarkers.delete(token);
  }

  /** @internal Turn: a failed run's marker that the database did not let it delete (retried: leftover-markers.ts). */
  markerLeftOver(marker: LeftoverMarker): void {
    this.leftovers.add(marker);
  }

  /** @internal Turn: a statement of this host succeeded, so markers left over by an outage can go now. */
  databaseAnswered(): void {
    if (this.leftovers.size > 0) this.leftovers.kick();
  }

  private async runTurn(act: Activation, env: RequestEnvelope): Promise<ReplyEnvelope> {
    const hit = act.recent.get(env.msgId);
    if (hit) return hit;
    /** A dead run's marker of this message (its host left the membership): this run may replace it. */
    let deadMarker: string | undefined;
    if (env.attempt > 1 && (act.def.persistence ?? "durable") === "durable") {
      // a resend: the first attempt may have committed on this or another host before its reply was lost. A database
      // that cannot answer that is the caller's 503 (errorFor), as in the turn itself.
      // A pending marker (a first run that checkpointed mid-turn, migration 0009) that has not expired: that run may
      // still answer, and its reply replaces the marker. Running the handler now would answer from its half-finished
      // state ("already in progress"), and that answer could reach the caller first: the retryable actor_unavailable
      // instead. The run of an expired marker, or of one whose host left the membership, is presumed dead: the handler
      // runs and resumes from its checkpoint.
      try {
        const rows = await this.opts.sql<{ reply: ReplyEnvelope | null; pending_turn: string | null; live: boolean | null }[]>`
          SELECT reply, pending_turn, pending_until > now() AS live FROM actor_inbox WHERE kind = ${act.def.kind} AND id = ${act.id} AND msg_id = ${env.msgId}`;
        const row = rows[0];
        if (row && row.reply !== null) return row.reply;
        if (row?.live && row.pending_turn !== null) {
          if (this.markerIsLive(row.pending_turn)) return errorReply(new ActorError("actor_unavailable", BUSY_MESSAGE));
          deadMarker = row.pending_turn;
        }
      } catch (err) {
        return this.errorFor(act, err);
      }
    }
    if (env.deadline < this.wallClock.now()) {
      this.log.debug("caller's deadline passed before the turn started", { kind: act.def.kind, id: act.id, type: env.type });
      return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
    }
    const started = performance.now();
    // The durable reply is for a resend that may reach another activation. Over a lossless transport (in-process) a
    // caller resends only after `actor_unavailable`, which no committed turn answers, and never after its deadline:
    // nobody can ask for the reply again, so it is not written (three inbox rows per checkout journey). A caller-named
    // message (attempt > 1 on its first send) may repeat one from before a restart: its reply is kept.
    // A presumed-new turn keeps its reply too: if the acknowledgement of its insert is lost, the caller's retry must
    // find the committed reply rather than run `create` again on the row it wrote (one inbox row per new actor).
    const keepReply = !this.opts.transport.lossless || env.attempt > 1 || act.presumedNew;
    // A mid-turn checkpoint leaves a pending marker only where a resend can reach another activation while this turn
    // runs (a lossy transport, i.e. NATS): in-process, a resend queues behind the turn in this activation's mailbox.
    // Not for a reminder: no caller waits for its answer, and a marker would hold the actor back (loads refused) for
    // its deadline and margin after its host died, delaying the reconcile it exists for.
    const isReminder = env.type.startsWith(REMINDER_PREFIX);
    const turn = new Turn(this, act, env.msgId, false, env.deadline, keepReply, !this.opts.transport.lossless && !isReminder, deadMarker);
    let reply: ReplyEnvelope;
    try {
      let value: unknown;
      if (isReminder) {
        const name = env.type.slice(REMINDER_PREFIX.length);
        const fn = act.def.reminders?.[name];
        const body = env.body as { payload: unknown; due: string };
        if (fn) await fn(turn.ctx, body.payload);
        // a one-shot reminder is deleted with the turn's write, unless it was rescheduled or moved meanwhile
        if (!turn.rescheduled.has(name)) turn.deleteFiredReminder(name, body.due);
      } else {
        value = await act.def.handlers[env.type](turn.ctx, env.body);
      }
      reply = { ok: true, value: value === undefined ? null : value };
      await turn.finish(true, reply);
    } catch (err) {
      reply = this.errorFor(act, err);
      try {
        await turn.finish(false);
      } catch (finishErr) {
        reply = this.errorFor(act, finishErr);
      }
      // applied by another activation: its reply is the message's result (actor_unavailable, to retry, if unreadable)
      if (err instanceof AlreadyApplied) reply = (await this.appliedReply(act, env.msgId)) ?? reply;
    }
    if (act.presumedNew && !act.stale) {
      // the fenced insert vouches for a turn that wrote; one that did not must not answer from a guessed state
      if (turn.wroteState) act.presumedNew = false;
      // The database failed the turn before its state write could have reached it (connection refused, the handler's
      // own query failed, ...): nothing was created, that answer does not depend on the guessed state, and the check
      // below would fail the same way (a retry against refused connections until the deadline); the next message
      // reloads. A state write lost on the way back (the connection dropped with the statement or COMMIT out) may
      // have committed: then the check settles it, and the caller's resend finds the committed reply in actor_inbox
      // instead of a 503 that an HTTP client answers by creating the cart again (review R2-F5).
      else if (!reply.ok && reply.error.code === "service_unavailable" && !turn.writeInDoubt) act.stale = true;
      else if (await this.presumedNewWasWrong(act)) reply = this.notLoadedYet(act);
    }
    recordTurnOf(act.def.kind, reply.ok ? "ok" : reply.error.code, (performance.now() - started) / 1000);
    return reply;
  }

  /** The id of a presumed-new activation existed after all: the caller's retry reads its row (a fixed text, as below). */
  private notLoadedYet(act: Activation): ReplyEnvelope {
    this.log.debug("presumed-new actor exists; the caller retries on its loaded state", { kind: act.def.kind, id: act.id });
    return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
  }

  private errorFor(act: Activation, err: unknown): ReplyEnvelope {
    // Fencing conflicts are counted (actor_fencing_conflicts_total) and logged at debug; the caller, which retries
    // them, reads a fixed text.
    if (err instanceof AlreadyApplied) {
      act.stale = true; // another activation writes this actor: what waits here reloads, and checks the inbox first
      actorFencingConflicts.inc({ kind: act.def.kind });
      this.log.debug("message already applied by another activation; the caller retries", { kind: act.def.kind, id: act.id });
      return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
    }
    if (err instanceof StaleVersion) {
      act.stale = true;
      actorFencingConflicts.inc({ kind: act.def.kind });
      this.log.debug("actor written by another activation (moved host); the caller retries", { kind: act.def.kind, id: act.id });
      return errorReply(new ActorError("actor_unavailable", UNAVAILABLE_TEXT));
    }
    if (err instanceof ActorError) return errorReply(err);
    if (isInputDataError(err)) return errorReply(new ActorError("validation_error", "A value in the request is not acceptable (for example a NUL byte or an out-of-range number)."));
    // the database cannot be reached (connection refused or lost, a pooled query past its deadline): the caller may
    // retry after a while, which 503 says. The turn's own writes did not commit; anything it did outside the
    // database before failing (a card capture) is recovered as after any failed turn (its intent row, reconcile).
    if (isDatabaseUnavailable(err)) {
      const sqlstate = (err as { code?: unknown }).code;
      if (LOCK_CONFLICT_SQLSTATES.some((s) => s === sqlstate)) {
        // Not an outage: two concurrent turns took rows in different orders (a lock-order bug: docs/checkout.md "Lock
        // order"). The turn's writes rolled back and the caller may retry the same call; logged as an error so that a
        // regression is seen, never re-run here (a turn may have checkpointed and called a processor before failing).
        actorLockConflicts.inc({ kind: act.def.kind, sqlstate: sqlstate as string });
        this.log.error("actor turn failed: lock conflict between concurrent turns (rolled back; the caller may retry)", { kind: act.def.kind, id: act.id, sqlstate, error: err as Error });
      } else this.log.warn("actor turn failed: database unavailable", { kind: act.def.kind, id: act.id, error: err as Error });
      return errorReply(new ActorError("service_unavailable", "The database is unavailable; retry after 30 seconds."));
    }
    this.log.error("actor turn failed", { kind: act.def.kind, id: act.id, error: err as Error, stack: (err as Error)?.stack });
    return errorReply(new ActorError("internal_error", "internal error"));
  }

  /** The reply actor_inbox holds for `msgId` (undefined when it cannot be read or is pending: the caller retries). */
  private async appliedReply(act: Activation, msgId: string): Promise<ReplyEnvelope | undefined> {
    try {
      const rows = await this.opts.sql<{ reply: ReplyEnvelope | null }[]>`
        SELECT reply FROM actor_inbox WHERE kind = ${act.def.kind} AND id = ${act.id} AND msg_id = ${msgId}`;
      // a live marker of another run (AF003 on this run's marker or reply) is no reply yet: the caller retries
      return rows[0]?.reply ?? undefined;
    } catch {
      return undefined;
    }
  }

  private passivating = false;

  /**
   * Drops activations idle for `idleMs`. Those of a kind with a hand-over (rate-limit buckets, which live in memory)
   * write it first, as a clean stop does, and go only once it is written, so the next activation loads them: waiting
   * out the idle time no longer refills a 15-minute window (audit W-2). One used meanwhile stays.
   */
  private async passivateIdle(idleMs: number): Promise<void> {
    if (this.passivating) return;
    this.passivating = true;
    try {
      const cutoff = Date.now() - idleMs;
      // Still loading is not idle: its read-only messages (the rate-limit admits) wait on the load in no queue, and an
      // activation dropped then, not handed over, counted them where nobody hands them over (a load longer than
      // ACTOR_IDLE_MS; test/http/rate-limit-idle.test.ts under load, session 14)
      const idle = (a: Activation) => a.loaded && !a.running && a.queue.length === 0 && a.lastUsed < cutoff;
      const going = [...this.allActivations()].filter(([, , a]) => idle(a));
      // until written: a new activation of one of them here meanwhile would load the row before it
      await this.handOver(going.map(([, , a]) => a).filter((a) => a.loaded && !a.stale));
      for (const [map, key, a] of going) if (map.get(key) === a && idle(a)) map.delete(key);
    } finally {
      this.passivating = false;
    }
  }

  /** While the database is down the poll fails every time: spaced out (up to 5 s) and logged once in a while. */
  private pollBackoff?: LoopBackoff;

  private scheduleReminderPoll(pollMs: number, delayMs = pollMs): void {
    if (this.stopping) return;
    const backoff = (this.pollBackoff ??= new LoopBackoff("reminder poll", this.log, { baseMs: 1000, maxMs: 5_000 }));
    this.reminderTimer = setTimeout(async () => {
      let next = pollMs;
      try {
        this.polling = this.pollReminders();
        await this.polling;
        await this.sweepInbox();
        backoff.succeeded();
        this.databaseAnswered();
      } catch (err) {
        next = Math.max(pollMs, backoff.failed(err));
      }
      this.scheduleReminderPoll(pollMs, next);
    }, delayMs);
  }

  /**
   * Claims due reminders (lease so no other host fires them meanwhile) and delivers each as a message through
   * the transport, so it reaches whichever host owns the actor. Returns how many fired. Tests call it directly.
   */
  private lastInboxSweep = 0;

  /** Deletes inbox rows no caller can still retry. Runs from the reminder loop, at most once a minute. */
  async sweepInbox(force = false): Promise<number> {
    if (!force && Date.now() - this.lastInboxSweep < INBOX_SWEEP_MS) return 0;
    this.lastInboxSweep = Date.now();
    const res = await this.opts.sql`DELETE FROM actor_inbox WHERE expires_at < now()`;
    return res.count;
  }

  async pollReminders(limit = 100): Promise<number> {
    const kinds = [...this.defs.keys()];
    const now = new Date(this.clock.now());
    const lease = new Date(this.clock.now() + REMINDER_LEASE_MS);
    const due = await this.opts.sql<{ kind: string; id: string; name: string; payload: unknown; due_at: Date }[]>`
      UPDATE actor_reminders r SET due_at = ${lease}
      FROM (SELECT kind, id, name FROM actor_reminders
            WHERE due_at <= ${now} AND kind IN ${this.opts.sql(kinds)}
            ORDER BY due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED) d
      WHERE r.kind = d.kind AND r.id = d.id AND r.name = d.name
      RETURNING r.kind, r.id, r.name, r.payload, r.due_at`;
    await Promise.all(
      due.map(async (r) => {
        const env: RequestEnvelope = {
          msgId: `reminder:${r.kind}/${r.id}/${r.name}/${r.due_at.toISOString()}`,
          kind: r.kind,
          id: r.id,
          type: REMINDER_PREFIX + r.name,
          body: { payload: r.payload, due: r.due_at.toISOString() },
          deadline: Date.now() + 30_000,
          attempt: 1,
        };
        try {
          const reply = await this.opts.transport.request(env, 30_000);
          if (!reply.ok) this.log.warn("reminder failed; it fires again after its lease", { kind: r.kind, id: r.id, name: r.name, code: reply.error.code });
        } catch (err) {
          this.log.warn("reminder not delivered; it fires again after its lease", { kind: r.kind, id: r.id, name: r.name, error: err as Error });
        }
      }),
    );
    return due.length;
  }

  /** @internal used by Turn */
  get internals() {
    return { sql: this.opts.sql, clock: this.clock, wallClock: this.wallClock, log: this.log, caller: this.opts.caller, transport: this.opts.transport, hostId: this.opts.transport.hosts?.self };
  }
}

interface ReadOnlyDeps {
  sql: Sql;
  clock: Clock;
  log: Logger;
  caller: ActorCaller;
}

/**
 * What a read-only turn's handler sees: the same members as a write turn's context, on one class so every
 * read-only turn of every actor has the same shape (one small object per turn instead of a context with
 * accessors and ~10 closures). Every write (tx, checkpoint, reminders) is refused, and events are not sent: a
 * read-only turn never ends in a commit (as before).
 */
class ReadOnlyContext implements ActorContext<unknown> {
  constructor(
    private readonly act: Activation,
    readonly msgId: string,
    private readonly deps: ReadOnlyDeps,
  ) {}
  get kind(): string {
    return this.act.def.kind;
  }
  get id(): string {
    return this.act.id;
  }
  get state(): unknown {
    return this.act.state;
  }
  set state(v: unknown) {
    this.act.state = v;
  }
  get memory(): Map<string, unknown> {
    return this.act.memory;
  }
  get sql(): Sql {
    return this.deps.sql;
  }
  get log(): Logger {
    return (this.act.logger ??= this.deps.log.child({ actor: `${this.act.def.kind}/${this.act.id}` }));
  }
  now(): number {
    return this.deps.clock.now();
  }
  ask<D extends AnyActorDefinition, T extends MessageType<D>>(def: D, id: string, type: T, body: MessageBody<D, T>, opts?: CallOptions): Promise<ReplyOf<D, T>> {
    return this.deps.caller.ask(def, id, type, body, opts);
  }
  tx(): Promise<Sql> {
    return this.refuse();
  }
  checkpoint(): Promise<void> {
    return this.refuse();
  }
  schedule(): Promise<void> {
    return this.refuse();
  }
  cancelReminder(): Promise<void> {
    return this.refuse();
  }
  publish(): void {}
  private refuse(): Promise<never> {
    return Promise.reject(new Error(`reentrant handler of ${this.act.def.kind} tried to write`));
  }
}

/** The turn behind each write turn's context: `checkpointWith` finds it without a new member on ActorContext. */
const turnOfContext = new WeakMap<object, Turn>();

/**
 * `ctx.checkpoint()` with writes of the turn's own riding in the state statement (state-write.ts, `RidingWrite`):
 * one autocommit statement instead of BEGIN, the turn's statement, the state statement and COMMIT (two round trips).
 * Resolves to the statement's row (the write's `select` columns) once all of it is durable. Only for a turn with
 * no transaction open: with one, it answers a refusal at once (nothing sent) and the caller takes its general path.
 *
 * When the write's guard refuses (SQLSTATE AF002, `isWriteRefused`), nothing at all was written and the turn goes on:
 * its in-memory state and reminder changes are as the handler left them, so the handler undoes what assumed the
 * write and takes its general path. A stale version is a StaleVersion, as for any state write.
 *
 * `finalReply`: the value the handler returns right after this call (nothing of the turn changes after it). Its
 * reply for resends is then written in this statement too, instead of in one more state write at the turn's end.
 */
export function checkpointWith<R extends Record<string, unknown>>(ctx: ActorContext<unknown>, write: RidingWrite, opts: { finalReply?: unknown } = {}): Promise<R> {
  const turn = turnOfContext.get(ctx);
  if (!turn) return Promise.reject(new Error(`checkpointWith outside a write turn of ${ctx.kind}/${ctx.id}`));
  return turn.checkpointWith(write, "finalReply" in opts ? { ok: true, value: opts.finalReply === undefined ? null : opts.finalReply } : undefined) as Promise<R>;
}

/**
 * One turn of one activation: its context, its lazily opened transaction, the reminder changes and events it will
 * commit. A turn's writes reach Postgres in as few round trips as the turn allows:
 *  - nothing but state (and reminders, and the reply for retries): ONE autocommit statement (state-write.ts);
 *  - with ctx.tx() writes: BEGIN goes out with the first of them, and the state statement with COMMIT;
 *  - with a riding write (checkpointWith): that write and the state in ONE autocommit statement.
 */
class Turn {
  readonly ctx: ActorContext<unknown>;
  readonly rescheduled = new Set<string>();
  /** True once this turn's state row write committed. */
  wroteState = false;
  /** A state write of this turn failed after it may have reached the database: it may have committed. */
  writeInDoubt = false;
  /** The turn's reply for resends is durable already (checkpointWith's finalReply): never written twice. */
  private replyWritten = false;
  /**
   * This run's token in its pending marker, `<host id>/<random>` (made on its first mid-turn checkpoint): the host
   * part lets other hosts tell a dead host's marker from a live one's (ActorHost.markerIsLive). `markerLive` while
   * the marker stands; `markerSent` from its write until the run's reply certainly replaced it (what a failed run
   * deletes).
   */
  private markerToken?: string;
  private markerLive = false;
  private markerSent = false;
  private readonly reminderOps = new Map<string, ReminderOp>();
  private conn?: Awaited<ReturnType<Sql["reserve"]>>;
  private connPromise?: Promise<Sql>;
  private begin?: Promise<unknown>;
  private snapshot: string;
  private events: { topic: string; event: unknown }[] = [];
  private logger?: Logger;

  constructor(
    private readonly host: ActorHost,
    private readonly act: Activation,
    msgId: string,
    private readonly readOnly = false,
    private readonly deadline = host.internals.wallClock.now(),
    /** Whether this turn's reply is written to actor_inbox for a resend (see runTurn). */
    private readonly keepReply = true,
    /** Whether a mid-turn checkpoint leaves a pending marker for the message (see runTurn). */
    private readonly markPending = false,
    /** A dead run's marker of this message that this run's inbox row may replace (see runTurn). */
    private readonly deadMarker?: string,
  ) {
    const { sql, clock, log, caller } = host.internals;
    const durable = (act.def.persistence ?? "durable") === "durable";
    this.snapshot = durable && !readOnly ? (act.stateJson ?? JSON.stringify(act.state)) : "";
    // from here until the turn ends the handler may change the state: its own write or rollback sets this again
    act.stateJson = undefined;
    const self = this;
    this.ctx = {
      kind: act.def.kind,
      id: act.id,
      get state() {
        return act.state;
      },
      set state(v) {
        act.state = v;
      },
      memory: act.memory,
      sql,
      // built on first use: most turns never log
      get log() {
        return (self.logger ??= log.child({ actor: `${act.def.kind}/${act.id}` }));
      },
      msgId,
      now: () => clock.now(),
      ask: (def, id, type, body, opts) => caller.ask(def, id, type, body, opts),
      tx: () => self.tx(),
      checkpoint: async () => void (await self.persistAndCommit(undefined, undefined, true)),
      // Reminder changes are kept until the turn's state write, which carries them (no statement of their own).
      async schedule(name, at, payload) {
        if (!act.def.reminders?.[name]) throw new Error(`actor ${act.def.kind} has no reminder ${name}`);
        self.assertWritable();
        self.rescheduled.add(name);
        self.reminderOps.set(name, { op: "set", dueAt: new Date(at).toISOString(), payload: payload ?? null });
      },
      async cancelReminder(name) {
        self.assertWritable();
        self.rescheduled.add(name);
        self.reminderOps.set(name, { op: "delete" });
      },
      publish(topic, event) {
        self.events.push({ topic, event });
      },
    };
    if (!readOnly) turnOfContext.set(this.ctx, this);
  }

  async checkpointWith(write: RidingWrite, finalReply?: ReplyEnvelope): Promise<Record<string, unknown>> {
    this.assertWritable();
    // With a transaction open the riding statement cannot go (a refusal would abort the transaction): answered as a
    // refusal, so the caller takes its general path inside that transaction instead of failing the turn (review J).
    if (this.connPromise) throw Object.assign(new Error(`actor ${this.act.def.kind}: checkpointWith with a transaction open`), { code: WRITE_REFUSED });
    const row = (await this.persistAndCommit(finalReply, write, !finalReply)) as Record<string, unknown>;
    if (finalReply) this.replyWritten = true;
    return row;
  }

  /** The reminder that started this turn goes with the turn's write, only if its row still has this due time. */
  deleteFiredReminder(name: string, due: string): void {
    this.reminderOps.set(name, { op: "delete", due });
  }

  private assertWritable(): void {
    if (this.readOnly) throw new Error(`reentrant handler of ${this.act.def.kind} tried to write`);
    if ((this.act.def.persistence ?? "durable") === "memory") throw new Error(`memory actor ${this.act.def.kind} has no database`);
  }

  private tx(): Promise<Sql> {
    try {
      this.assertWritable();
    } catch (err) {
      return Promise.reject(err);
    }
    if (!this.connPromise) {
      this.connPromise = (async () => {
        const conn = await this.host.internals.sql.reserve();
        this.conn = conn;
        // Not awaited: BEGIN is pipelined with the turn's first statement on this connection (one round trip).
        // Statements on one connection run in order, and a BEGIN can only fail with the connection, which fails
        // the statements queued behind it too; persistAndCommit still checks it before committing.
        const begin = conn`BEGIN`.execute();
        begin.catch(() => {});
        this.begin = begin;
        return conn as unknown as Sql;
      })();
    }
    return this.connPromise;
  }

  /**
   * Writes the state row (fenced), the reminder changes and the reply for retries, and commits the turn's
   * transaction if it has one: the state statement and COMMIT travel together, and a failed fence raises inside
   * the transaction so that COMMIT rolls everything back. Skipped when there is nothing to write.
   */
  private async persistAndCommit(reply?: ReplyEnvelope, riding?: RidingWrite, midTurn = false): Promise<Record<string, unknown> | undefined> {
    const act = this.act;
    if (this.connPromise) await this.connPromise;
    const current = JSON.stringify(act.state);
    const changed = current !== this.snapshot;
    // Nothing left to write — unless a checkpoint of this turn already committed its changes: then the retry
    // reply must still be written, or a resend would find no reply and run the handler a second time.
    if (this.replyWritten) reply = undefined;
    if (!changed && !this.conn && !riding && this.reminderOps.size === 0 && !(reply && this.keepReply && this.wroteState)) {
      this.publishEvents();
      return undefined;
    }
    // printed only when the reply is written (a first send over the in-process bus keeps none: runTurn)
    const replyJson = reply && this.keepReply ? JSON.stringify(reply) : undefined;
    // Expiry of the reply, and the time until which a mid-turn checkpoint's run may still answer its caller: the
    // caller's deadline and the inbox's margin for skew between the caller's and this host's clocks. Sent as the time
    // LEFT, which the database adds to its own clock: readers compare with that clock (now()), and an absolute time
    // made here carried this host's skew from it (a host far enough behind wrote markers already expired, so they
    // protected nothing; one ahead held other hosts back longer). Thrown here, before anything is sent, if not a number.
    const timeLeft = (): number => {
      const ms = Math.max(0, this.deadline - this.host.internals.wallClock.now()) + INBOX_MARGIN_MS;
      if (!Number.isFinite(ms)) throw new Error(`actor ${act.def.kind}/${act.id}: the turn's deadline is not a time`);
      return Math.round(ms);
    };
    const marker = midTurn && this.markPending && this.keepReply && !this.markerLive;
    if (marker && !this.markerToken) {
      this.markerToken = `${this.host.internals.hostId ?? ""}/${crypto.randomUUID()}`;
      this.host.trackMarker(this.markerToken, true);
    }
    if (marker) this.markerSent = true;
    const write: StateWrite = {
      kind: act.def.kind,
      id: act.id,
      version: act.version,
      stateJson: current,
      expiry: act.def.expiryOf?.(act.state),
      reminders: this.reminderOps,
      reply: replyJson !== undefined ? { msgId: this.ctx.msgId, json: replyJson, expiresInMs: timeLeft(), turn: this.markerToken } : undefined,
      pending: marker ? { msgId: this.ctx.msgId, forMs: timeLeft(), turn: this.markerToken! } : undefined,
      replacesMarker: this.deadMarker,
    };
    try {
      return await this.send(write, riding, current, reply);
    } catch (err) {
      // Only the database's own failures can leave a write in doubt: a fence, a refusal or a duplicate reply is a
      // definite "not written", and a connection never opened (or a query withdrawn unsent) sent nothing.
      if (isDatabaseUnavailable(err) && !isNeverSent(err)) this.writeInDoubt = true;
      throw err;
    }
  }

  private async send(write: StateWrite, riding: RidingWrite | undefined, current: string, reply: ReplyEnvelope | undefined): Promise<Record<string, unknown> | undefined> {
    const act = this.act;
    const conn = this.conn;
    let row: Record<string, unknown> | undefined;
    if (riding) {
      // no transaction is open (checkpointWith): autocommit, and a refusal (AF002) leaves everything as it was
      const { sql } = this.host.internals;
      [row] = await ridingStatement(sql, write, riding).catch(rethrowFence);
    } else if (!conn) {
      const { text, params } = stateWriteStatement(write);
      // a turn's write waits for the database however long it takes: no pool deadline (infra/db.ts `withoutDeadline`)
      await withoutDeadline(this.host.internals.sql).unsafe(text, params, { prepare: true }).catch(rethrowFence);
    } else {
      const { text, params } = stateWriteStatement(write);
      const begin = this.begin;
      this.conn = undefined;
      this.connPromise = undefined;
      this.begin = undefined;
      let written: PromiseSettledResult<unknown>;
      let committed: PromiseSettledResult<unknown>;
      try {
        [written, committed] = await Promise.allSettled([conn.unsafe(text, params, { prepare: true }), conn`COMMIT`]);
      } finally {
        conn.release();
      }
      await begin;
      if (written.status === "rejected") rethrowFence(written.reason);
      if (committed.status === "rejected") throw committed.reason;
    }
    this.wroteState = true;
    this.host.databaseAnswered();
    act.version += 1;
    // the marker stands from its checkpoint until the turn's reply replaces it
    if (write.pending) this.markerLive = true;
    if (write.reply) this.markerLive = this.markerSent = false;
    if (reply) {
      act.recent.set(this.ctx.msgId, reply);
      if (act.recent.size > RECENT_REPLIES) act.recent.delete(act.recent.keys().next().value as string);
    }
    this.snapshot = current;
    this.reminderOps.clear();
    this.publishEvents();
    return row;
  }

  private publishEvents(): void {
    const { transport } = this.host.internals;
    for (const e of this.events.splice(0)) void transport.publish(e.topic, e.event).catch(() => {});
  }

  private async rollback(): Promise<void> {
    if (this.connPromise) await this.connPromise.catch(() => {});
    if (!this.conn) return;
    const conn = this.conn;
    this.conn = undefined;
    this.connPromise = undefined;
    this.begin = undefined;
    try {
      await conn`ROLLBACK`;
    } finally {
      conn.release();
    }
  }

  /** Ends the turn: commit state + writes (ok) or roll them back and restore the last committed state (error). */
  async finish(ok: boolean, reply?: ReplyEnvelope): Promise<void> {
    if (this.readOnly || (this.act.def.persistence ?? "durable") === "memory") {
      if (ok) this.publishEvents();
      return;
    }
    let ended = !ok;
    try {
      await this.finishDurable(ok, reply);
      ended = true;
    } finally {
      // the run is over once its reply replaced its marker, or once it failed (and deleted it, or could not): a failed
      // finish(true) is followed by finish(false)
      if (ended && this.markerToken) this.host.trackMarker(this.markerToken, false);
    }
  }

  private async finishDurable(ok: boolean, reply?: ReplyEnvelope): Promise<void> {
    if (ok) {
      try {
        await this.persistAndCommit(reply);
        // the handler has returned and the state is as written (or as it was, unchanged): the next turn's snapshot
        this.act.stateJson = this.snapshot;
      } catch (err) {
        await this.rollback().catch(() => {});
        this.act.state = JSON.parse(this.snapshot);
        throw err;
      }
    } else {
      try {
        await this.rollback();
      } finally {
        this.act.state = JSON.parse(this.snapshot);
        this.events = [];
        await this.dropMarker();
      }
    }
  }

  /**
   * A run that checkpointed mid-turn and ends without its reply (an error, a refused or lost final write) takes its
   * marker back, so a resend runs the handler at once (on the checkpointed state, as before markers) instead of
   * waiting for the marker to expire. Only its own marker (its token): a final reply or another run's marker stays.
   * If the database refuses this too, the marker is dead on this host at once (its run is no longer tracked), but
   * other hosts take it for live while this host is a member: it is kept in the host's leftover list and deleted once
   * the database answers again (leftover-markers.ts), instead of holding the actor back elsewhere until its time passes.
   */
  private async dropMarker(): Promise<void> {
    // also a marker whose write is in doubt (it may have committed): deleting by token removes nothing else
    if (!this.markerSent) return;
    this.markerLive = this.markerSent = false;
    const { sql, log } = this.host.internals;
    const token = this.markerToken!;
    try {
      await sql`DELETE FROM actor_inbox WHERE kind = ${this.act.def.kind} AND id = ${this.act.id} AND msg_id = ${this.ctx.msgId} AND pending_turn = ${token}`;
    } catch (err) {
      log.warn("could not delete a failed turn's pending marker; deleted once the database answers", { kind: this.act.def.kind, id: this.act.id, error: err as Error });
      this.host.markerLeftOver({ kind: this.act.def.kind, id: this.act.id, msgId: this.ctx.msgId, token, until: this.deadline + INBOX_MARGIN_MS });
    }
  }
}

/**
 * A failed version fence (SQLSTATE AF001) is a StaleVersion; a reply already in actor_inbox for the message, or
 * another run's live pending marker (AF003), an AlreadyApplied; anything else is rethrown as it is.
 */
function rethrowFence(err: unknown): never {
  throw isFenceFailure(err) ? new StaleVersion() : isDuplicateReply(err) ? new AlreadyApplied() : err;
}

function errorReply(err: ActorError): ReplyEnvelope {
  return { ok: false, error: err.toData() };
}
