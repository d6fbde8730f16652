/**
 * Placement of actor partitions on hosts, with no coordinator.
 *
 * - An actor `kind/id` lives in partition `fnv1a(id) mod P`; a partition is a NATS subject `actor.<kind>.<p>`.
 * - Hosts heartbeat into a JetStream KV bucket. Each host watches the bucket and derives the same live set, then
 *   picks the owner of every partition by rendezvous (highest-random-weight) hashing over the live hosts that
 *   serve that kind. When a host joins or dies only the partitions it wins or held move.
 * - Liveness is judged on the bucket's own (server-assigned) timestamps, relative to the newest heartbeat seen:
 *   a host is dead when the freshest heartbeat in the bucket is more than `ttlMs` newer than its own last one.
 *   So a stalled bucket (a JetStream leader election, a reconnect) declares nobody dead, and a host that was
 *   frozen (SIGSTOP, a VM pause) sees on waking that others moved on without it and drops out by itself until
 *   its next heartbeat lands. Durable writes stay fenced by version in any case (ActorHost), so a brief double
 *   owner can never overwrite newer state; placement only keeps such overlaps rare and short.
 *
 * The pure parts (hashes, rendezvous, MemberView) are unit-tested in test/actors/transport-placement.test.ts;
 * `Membership` is the I/O around them (heartbeat loop + KV watch).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { Kvm, type KV } from "@nats-io/kv";

// ---------------------------------------------------------------------------------------------------------------
// pure parts

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/** 32-bit FNV-1a over the UTF-8 bytes of `s` (stable across processes, runtimes and versions). */
export function fnv1a32(s: string): number {
  let h = FNV_OFFSET;
  const bytes = utf8.encode(s);
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i];
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

/** murmur3's finaliser: FNV-1a alone mixes its last bytes poorly, which would bias rendezvous weights. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function partitionOf(id: string, partitions: number): number {
  return fnv1a32(id) % partitions;
}

export function partitionSubject(kind: string, partition: number): string {
  return `actor.${kind}.${partition}`;
}

export function rendezvousWeight(hostId: string, kind: string, partition: number): number {
  return fmix32(fnv1a32(`${hostId}\u0000${kind}\u0000${partition}`));
}

/** The one owner of `kind` partition `partition` among `hostIds` (undefined when there is none). */
export function rendezvousOwner(kind: string, partition: number, hostIds: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestW = -1;
  for (const h of hostIds) {
    const w = rendezvousWeight(h, kind, partition);
    if (w > bestW || (w === bestW && best !== undefined && h < best)) {
      best = h;
      bestW = w;
    }
  }
  return best;
}

/** Partitions of `kind` that `self` owns when `hostIds` (which should include self) are the live hosts. */
export function ownedPartitions(self: string, kind: string, partitions: number, hostIds: readonly string[]): number[] {
  const out: number[] = [];
  for (let p = 0; p < partitions; p++) if (rendezvousOwner(kind, p, hostIds) === self) out.push(p);
  return out;
}

/** What a host writes into the membership bucket on every heartbeat (also read by `cluster status`). */
export interface HostBeat {
  hostId: string;
  /** Actor kinds this host serves. */
  kinds: string[];
  partitions: number;
  ttlMs: number;
  /** Active activations per kind at the time of the beat. */
  activations: Record<string, number>;
  /** How many partitions of each kind the host owned at the time of the beat. */
  owned: Record<string, number>;
  startedAt: number;
  pid: number;
  hostname: string;
  /**
   * The host answers releases of its partitions (nats.ts `acquire`). Absent on hosts older than that: a joiner does
   * not wait for them (a rolling upgrade would otherwise leave their moved partitions unserved until they stop).
   */
  releases?: boolean;
}

interface Member {
  created: number;
  beat: HostBeat;
  /** The frontier when this member was first seen past its TTL (none of its beats landed since): see `isGone`. */
  missingSince?: number;
}

/**
 * How long (bucket time) a member must have been past its TTL before `MemberView.isGone` calls it gone: longer than a
 * live host can take to land its first beat once JetStream answers again after a stall. A beat that was in flight
 * then can still time out (`Membership.beatNow`: max(500 ms, heartbeat)) and is retried 200 ms later
 * (`scheduleBeat`): at most 1.2 s with the defaults. Twice the timeout: 2 s with the default 1 s heartbeat.
 */
export function goneGraceMs(heartbeatMs: number): number {
  return 2 * Math.max(500, heartbeatMs);
}

/** The live-host set as one watcher of the membership bucket sees it. Pure: fed entries, asked questions. */
export class MemberView {
  private readonly members = new Map<string, Member>();
  private frontier = 0;

  constructor(
    readonly ttlMs: number,
    /** See `isGone` and `goneGraceMs`. */
    readonly graceMs = goneGraceMs(1000),
  ) {}

  /** A PUT seen on the bucket; `created` is the entry's server timestamp in epoch ms. */
  put(key: string, created: number, beat: HostBeat): void {
    const prev = this.members.get(key);
    // the same entry again (a rebuilt watch replays the bucket) keeps how long it has been missing
    if (prev && prev.created === created) prev.beat = beat;
    else if (!prev || prev.created < created) this.members.set(key, { created, beat });
    this.advance(created);
  }

  /** A DEL/PURGE seen on the bucket (a host that left cleanly). */
  remove(key: string, created?: number): void {
    this.members.delete(key);
    if (created !== undefined) this.advance(created);
  }

  private advance(created: number): void {
    if (created <= this.frontier) return;
    this.frontier = created;
    for (const m of this.members.values()) if (m.missingSince === undefined && this.frontier - m.created > this.ttlMs) m.missingSince = this.frontier;
  }

  /**
   * Whether a host is gone for good as far as this view can tell: it left (a clean close), or it has been past its TTL
   * for `graceMs` of bucket time, i.e. others' beats kept landing that long and none of its own did. Stricter than
   * `!isLive`, which decides ownership: right after a JetStream stall longer than the TTL, the first beat to land makes
   * every other host look dead until its own retried beat lands (~200 ms later). A decision that must not take a live
   * host for a dead one (ActorHost: a pending marker of a turn that may still answer) asks this. The grace is bucket
   * time, not this process's: a view that stands still (a broken watch) ages nobody.
   */
  isGone(hostId: string): boolean {
    const m = this.members.get(hostId);
    if (!m) return true;
    return m.missingSince !== undefined && this.frontier - m.missingSince >= this.graceMs;
  }

  /** Epoch ms of the newest heartbeat seen (server clock). */
  get newest(): number {
    return this.frontier;
  }

  isLive(hostId: string): boolean {
    const m = this.members.get(hostId);
    return !!m && this.frontier - m.created <= this.ttlMs;
  }

  /** Live host ids, sorted; only those serving `kind` when given. */
  live(kind?: string): string[] {
    const out: string[] = [];
    for (const [id, m] of this.members) {
      if (this.frontier - m.created > this.ttlMs) continue;
      if (kind !== undefined && !m.beat.kinds.includes(kind)) continue;
      out.push(id);
    }
    return out.sort();
  }

  all(): { hostId: string; created: number; live: boolean; beat: HostBeat }[] {
    return [...this.members.entries()]
      .map(([hostId, m]) => ({ hostId, created: m.created, live: this.frontier - m.created <= this.ttlMs, beat: m.beat }))
      .sort((a, b) => a.hostId.localeCompare(b.hostId));
  }
}

/** Ownership per kind, as every host with the same view computes it. */
export function computeOwnership(view: MemberView, kinds: readonly string[], partitions: number): Map<string, Map<number, string>> {
  const out = new Map<string, Map<number, string>>();
  for (const kind of kinds) {
    const hosts = view.live(kind);
    const m = new Map<number, string>();
    for (let p = 0; p < partitions; p++) {
      const o = rendezvousOwner(kind, p, hosts);
      if (o) m.set(p, o);
    }
    out.set(kind, m);
  }
  return out;
}

/** KV keys allow `[-/_=.a-zA-Z0-9]`; host ids are made of those (see `defaultHostId`). */
export function validHostId(id: string): boolean {
  return /^[-_=a-zA-Z0-9]+$/.test(id) && id.length <= 200;
}

// ---------------------------------------------------------------------------------------------------------------
// I/O: heartbeat + watch

export const DEFAULT_BUCKET = "actor_hosts";

export interface MembershipOptions {
  nc: NatsConnection;
  hostId: string;
  bucket?: string;
  heartbeatMs?: number;
  ttlMs?: number;
  /** Replicas of the KV stream: 3 on a cluster (survives one node), falls back to 1 on a single server. */
  replicas?: number;
  /** Called (coalesced) whenever the live set may have changed. */
  onChange: () => void;
  /** The heartbeat payload, minus the fields Membership fills in. */
  beat: () => Omit<HostBeat, "hostId" | "ttlMs">;
  onError?: (what: string, err: unknown) => void;
  /** The bucket, already open (tests pass a stand-in); by default `openHostsBucket` on `nc`. */
  kv?: KV;
}

/** How soon a watch that could not be rebuilt is tried again (JetStream refuses it while it elects a leader). */
const WATCH_RETRY_MS = 250;

/** Opens (creating if needed) the membership bucket. Shared by hosts and `cluster status`. */
export async function openHostsBucket(nc: NatsConnection, bucket: string, ttlMs: number, replicas = 3): Promise<KV> {
  const kvm = new Kvm(nc);
  // entries outlive the liveness window so a late watcher still sees who died recently; beyond that they go
  const opts = { history: 1, ttl: Math.max(30_000, ttlMs * 5) };
  try {
    return await kvm.create(bucket, { ...opts, replicas });
  } catch (err) {
    const msg = String((err as Error)?.message ?? err);
    if (replicas > 1 && /replica|clustered|insufficient resources/i.test(msg)) return openHostsBucket(nc, bucket, ttlMs, 1);
    // exists with another configuration (e.g. other replicas): use it as it is
    return kvm.open(bucket);
  }
}

/** JetStream's "stream not found" (10059), whichever call of the client raised it. */
function isStreamNotFound(err: unknown): boolean {
  const e = err as { name?: string; message?: string } | null;
  return e?.name === "StreamNotFoundError" || /stream not found/i.test(e?.message ?? "");
}

export class Membership {
  readonly view: MemberView;
  readonly hostId: string;
  readonly bucket: string;
  readonly heartbeatMs: number;
  readonly ttlMs: number;
  private kv?: KV;
  private hbTimer?: ReturnType<typeof setTimeout>;
  private watchdog?: ReturnType<typeof setInterval>;
  private stopped = false;
  private changePending = false;
  private lastRevisionSeen = 0;
  private lastSelfSeenAt = performance.now();
  private lastPutOkAt = performance.now();
  private waiters: { revision: number; resolve: () => void }[] = [];
  private watcher?: { stop(): void };
  private watchGeneration = 0;
  private rewatching = false;
  private readonly startedAt = Date.now();

  constructor(private readonly opts: MembershipOptions) {
    if (!validHostId(opts.hostId)) throw new Error(`host id "${opts.hostId}" may only contain letters, digits, - _ =`);
    this.hostId = opts.hostId;
    this.bucket = opts.bucket ?? DEFAULT_BUCKET;
    this.heartbeatMs = opts.heartbeatMs ?? 1000;
    this.ttlMs = opts.ttlMs ?? 3000;
    this.view = new MemberView(this.ttlMs, goneGraceMs(this.heartbeatMs));
  }

  /** Creates/opens the bucket, starts watching, writes a first heartbeat and waits until the watch has seen it. */
  async start(): Promise<void> {
    this.kv = this.opts.kv ?? (await openHostsBucket(this.opts.nc, this.bucket, this.ttlMs, this.opts.replicas ?? 3));
    // a freshly created replicated bucket answers only once its stream has elected a leader: until then a watch can
    // be refused (stream not found, when another host created the bucket a moment ago) and a put time out
    const end = Date.now() + 15_000;
    let createdAt = Date.now();
    for (;;) {
      try {
        await this.startWatch();
        break;
      } catch (err) {
        if (Date.now() > end) throw err;
        // Still no stream a second after our create: every create may have failed. Hosts starting together create
        // the one stream concurrently, and on a fresh cluster those creates can all time out (nats-server 2.9), after
        // which openHostsBucket only binds the name: the watch then met "stream not found" until this loop gave up
        // and the host exited (seen in test/distributed). Creating again is harmless: an existing stream is kept.
        if (!this.opts.kv && isStreamNotFound(err) && Date.now() - createdAt > 1000) {
          this.kv = await openHostsBucket(this.opts.nc, this.bucket, this.ttlMs, this.opts.replicas ?? 3).catch(() => this.kv);
          createdAt = Date.now();
        }
        await Bun.sleep(100);
      }
    }
    let rev: number;
    for (;;) {
      try {
        rev = await this.beatNow();
        break;
      } catch (err) {
        if (Date.now() > end) throw err;
        await Bun.sleep(100);
      }
    }
    await this.seen(rev, 10_000);
    this.scheduleBeat();
    // an ordered push consumer normally survives reconnects; if our own beats stop showing up, rebuild it
    this.watchdog = setInterval(() => {
      const now = performance.now();
      if (now - this.lastPutOkAt < this.heartbeatMs * 2 && now - this.lastSelfSeenAt > this.heartbeatMs * 4) {
        this.lastSelfSeenAt = now;
        this.rewatch();
      }
    }, this.heartbeatMs);
  }

  /**
   * True while this host's last heartbeat was written within the TTL: the others count it live and it keeps its
   * partitions. False before `start`, after `stop`, and once the bucket has refused its beats for a TTL (NATS or
   * JetStream away). An actor host's `/health` answers 503 then (audit M-3).
   */
  isCurrent(now = performance.now()): boolean {
    return !this.stopped && this.kv !== undefined && now - this.lastPutOkAt <= this.ttlMs;
  }

  /** The newest bucket revision the view includes (a partition's release waits until the other host's view has it). */
  get revision(): number {
    return this.lastRevisionSeen;
  }

  /** True when the view includes everything up to at least this bucket revision. */
  hasSeen(revision: number): boolean {
    return this.lastRevisionSeen >= revision;
  }

  /** Resolves once the watch has delivered `revision` (rejects after `timeoutMs`). */
  seen(revision: number, timeoutMs: number): Promise<void> {
    if (this.hasSeen(revision)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const w = { revision, resolve: () => (clearTimeout(t), resolve()) };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`membership watch did not deliver revision ${revision} in ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Writes a heartbeat now; resolves with its bucket revision. */
  async beatNow(): Promise<number> {
    const beat: HostBeat = { ...this.opts.beat(), hostId: this.hostId, ttlMs: this.ttlMs };
    const rev = await this.kv!.put(this.hostId, JSON.stringify(beat), { timeout: Math.max(500, this.heartbeatMs) });
    this.lastPutOkAt = performance.now();
    return rev;
  }

  private scheduleBeat(delay = this.heartbeatMs): void {
    if (this.stopped) return;
    this.hbTimer = setTimeout(async () => {
      let next = this.heartbeatMs;
      try {
        await this.beatNow();
      } catch (err) {
        // a leader election or reconnect: try again soon so our beat lands among the first after the stall
        next = Math.min(200, this.heartbeatMs);
        this.opts.onError?.("heartbeat", err);
      }
      this.scheduleBeat(next);
    }, delay);
  }

  private async startWatch(): Promise<void> {
    const gen = ++this.watchGeneration;
    this.watcher?.stop();
    const iter = await this.kv!.watch({ key: ">" });
    this.watcher = iter;
    void (async () => {
      try {
        for await (const e of iter) {
          if (gen !== this.watchGeneration) break;
          const created = e.created.getTime();
          if (e.operation === "PUT") {
            try {
              this.view.put(e.key, created, e.json<HostBeat>());
            } catch {
              // not a heartbeat we understand: ignore
            }
            if (e.key === this.hostId) this.lastSelfSeenAt = performance.now();
          } else {
            this.view.remove(e.key, created);
          }
          if (e.revision > this.lastRevisionSeen) this.lastRevisionSeen = e.revision;
          this.changed();
        }
      } catch (err) {
        this.opts.onError?.("membership watch", err);
      }
      if (!this.stopped && gen === this.watchGeneration) {
        await Bun.sleep(200);
        if (!this.stopped && gen === this.watchGeneration) this.rewatch();
      }
    })();
  }

  /**
   * Rebuilds the watch, trying again every WATCH_RETRY_MS until it is up. While it is down the view stands still, as
   * it was when the watch broke: possibly just after a stall, when the first heartbeat to land made every other host
   * (this one included) look dead. A single try that met a leader election left it so until the watchdog's next
   * turn, four heartbeats later, and again after each failure: a host that saw itself dead served nothing for
   * seconds after the bucket was back.
   */
  private rewatch(): void {
    if (this.rewatching || this.stopped) return;
    this.rewatching = true;
    void (async () => {
      try {
        while (!this.stopped) {
          try {
            await this.startWatch();
            return;
          } catch (e) {
            this.opts.onError?.("membership watch restart", e);
            await Bun.sleep(WATCH_RETRY_MS);
          }
        }
      } finally {
        this.rewatching = false;
      }
    })();
  }

  private changed(): void {
    if (this.waiters.length) {
      const ready = this.waiters.filter((w) => this.hasSeen(w.revision));
      this.waiters = this.waiters.filter((w) => !this.hasSeen(w.revision));
      for (const w of ready) w.resolve();
    }
    if (this.changePending) return;
    this.changePending = true;
    queueMicrotask(() => {
      this.changePending = false;
      if (!this.stopped) this.opts.onChange();
    });
  }

  get uptimeMs(): number {
    return Date.now() - this.startedAt;
  }

  /** Stops heartbeating and removes our entry so the others take over at once instead of after the TTL. */
  async stop(leave = true): Promise<void> {
    this.stopped = true;
    this.watchGeneration++;
    clearTimeout(this.hbTimer);
    clearInterval(this.watchdog);
    this.watcher?.stop();
    if (leave && this.kv) await this.kv.delete(this.hostId).catch(() => {});
  }
}
