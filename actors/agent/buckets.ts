/**
 * Rate-limit bucket math: fixed-window counters, pure, with the clock passed in.
 *
 * Why a fixed window: the spec's headers speak of a window that resets at a Unix time (`X-RateLimit-Reset`), which
 * a fixed window gives exactly; it counts exactly (N requests against a fresh limit-N bucket admit exactly N) and
 * needs two numbers per bucket. The window starts at the first request after the previous one ended (not at a
 * wall-clock minute), so clients are not synchronised into a burst at :00. The known cost: up to 2 × limit can
 * pass across one window boundary; the per-tool and global layers bound that in practice.
 *
 * The owning actor runs `admit` inside one mailbox turn, so checking and consuming are one atomic step.
 */

export interface BucketSpec {
  /** Stable id, e.g. `key:<keyId>:mcp` or `ip:<addr>:global`. */
  id: string;
  /** Requests allowed per window. */
  limit: number;
  windowMs: number;
}

export interface BucketState {
  /** Epoch ms at which the current window started. */
  windowStart: number;
  /** Units consumed in the current window. */
  count: number;
}

export interface Bucket extends BucketSpec {
  /** Absent for a bucket that has never been used (or was swept). */
  state?: BucketState;
}

/** What one bucket looks like to the client, in header units. */
export interface BucketView {
  id: string;
  limit: number;
  remaining: number;
  /** Unix seconds at which the current window ends (rounded up, so waiting until then is always enough). */
  reset: number;
}

export interface Admitted {
  allowed: true;
  /** The bucket with the fewest remaining requests after this one; it drives the X-RateLimit-* headers. */
  tightest: BucketView;
  views: BucketView[];
  /** New state of every input bucket, in input order. */
  states: BucketState[];
}

export interface Refused {
  allowed: false;
  /** The refusing bucket that frees up last; it drives the headers. */
  tightest: BucketView;
  views: BucketView[];
  /** Seconds until every refusing bucket has capacity again (>= 1). */
  retryAfter: number;
  refusedBy: string[];
  /** Unchanged states (expired windows rolled over, nothing consumed), in input order. */
  states: BucketState[];
}

export type AdmitResult = Admitted | Refused;

const windowEnd = (s: BucketState, windowMs: number) => s.windowStart + windowMs;

/** The bucket's state as of `now`: a finished window is replaced by an empty one starting now. */
export function currentState(bucket: Bucket, now: number): BucketState {
  const s = bucket.state;
  // A clock that steps backwards keeps the current window (fail closed) rather than refilling it.
  if (!s || now >= windowEnd(s, bucket.windowMs)) return { windowStart: now, count: 0 };
  return s;
}

function view(bucket: BucketSpec, state: BucketState): BucketView {
  return {
    id: bucket.id,
    limit: bucket.limit,
    remaining: Math.max(0, bucket.limit - state.count),
    reset: Math.ceil(windowEnd(state, bucket.windowMs) / 1000),
  };
}

function secondsUntil(state: BucketState, windowMs: number, now: number): number {
  return Math.max(1, Math.ceil((windowEnd(state, windowMs) - now) / 1000));
}

/** Fewest remaining wins; on a tie the one that resets later, then the smaller limit. */
export function tightestOf(views: readonly BucketView[]): BucketView {
  if (views.length === 0) throw new Error("tightestOf needs at least one bucket");
  return views.reduce((best, v) => {
    if (v.remaining !== best.remaining) return v.remaining < best.remaining ? v : best;
    if (v.reset !== best.reset) return v.reset > best.reset ? v : best;
    return v.limit < best.limit ? v : best;
  });
}

/**
 * Admits a request of `cost` units only if EVERY bucket has room for it, and then consumes from all of them;
 * if any bucket refuses, none is consumed.
 *
 * Plain loops rather than map/filter chains: this runs in every admitted request's actor turn (usually for one
 * or two buckets), where the intermediate arrays cost more than the arithmetic.
 */
export function admit(buckets: readonly Bucket[], now: number, cost = 1): AdmitResult {
  const n = buckets.length;
  if (n === 0) throw new Error("admit needs at least one bucket");
  if (!(cost > 0)) throw new Error("cost must be positive");
  const current: BucketState[] = new Array(n);
  let refusals = 0;
  for (let i = 0; i < n; i++) {
    const s = currentState(buckets[i]!, now);
    current[i] = s;
    if (s.count + cost > buckets[i]!.limit) refusals++;
  }

  if (refusals > 0) {
    const views: BucketView[] = new Array(n);
    const refusedBy: string[] = [];
    let tightest: BucketView | undefined;
    let retryAfter = 0;
    for (let i = 0; i < n; i++) {
      const b = buckets[i]!;
      const v = view(b, current[i]!);
      views[i] = v;
      if (current[i]!.count + cost > b.limit) {
        refusedBy.push(v.id);
        retryAfter = Math.max(retryAfter, secondsUntil(current[i]!, b.windowMs, now));
        // the refusing bucket that frees up last; the first one on a tie
        if (!tightest || v.reset > tightest.reset) tightest = v;
      }
    }
    return { allowed: false, tightest: { ...tightest!, remaining: 0 }, views, retryAfter, refusedBy, states: current };
  }

  const states: BucketState[] = new Array(n);
  const views: BucketView[] = new Array(n);
  for (let i = 0; i < n; i++) {
    states[i] = { windowStart: current[i]!.windowStart, count: current[i]!.count + cost };
    views[i] = view(buckets[i]!, states[i]!);
  }
  return { allowed: true, tightest: n === 1 ? views[0]! : tightestOf(views), views, states };
}

/**
 * Gives back units consumed by an earlier `admit` when a later step refused (e.g. a second owner actor's
 * buckets were full). Only the window the units were taken from is credited; a window that has since rolled
 * over is already fresh.
 */
export function release(bucket: Bucket, consumedInWindowStart: number, now: number, cost = 1): BucketState {
  const s = currentState(bucket, now);
  if (s.windowStart !== consumedInWindowStart) return s;
  return { windowStart: s.windowStart, count: Math.max(0, s.count - cost) };
}

/**
 * Combines the outcomes of admissions done on several owners (e.g. `agent/<id>` and `ip/<addr>`) into one for
 * the headers: refused if any refused (Retry-After is the longest wait), otherwise the overall tightest bucket.
 */
export function combineResults(results: readonly AdmitResult[]): AdmitResult {
  if (results.length === 0) throw new Error("combineResults needs at least one result");
  const views = results.flatMap((r) => r.views);
  const states = results.flatMap((r) => r.states);
  const refused = results.filter((r): r is Refused => !r.allowed);
  if (refused.length > 0) {
    return {
      allowed: false,
      tightest: refused.map((r) => r.tightest).reduce((a, v) => (v.reset > a.reset ? v : a)),
      views,
      retryAfter: Math.max(...refused.map((r) => r.retryAfter)),
      refusedBy: refused.flatMap((r) => r.refusedBy),
      states,
    };
  }
  return { allowed: true, tightest: tightestOf(views), views, states };
}

/** The spec's response headers. Retry-After only on refusal. */
export function rateLimitHeaders(result: AdmitResult): Record<string, string> {
  const h: Record<string, string> = {
    "X-RateLimit-Limit": String(result.tightest.limit),
    "X-RateLimit-Remaining": String(result.allowed ? result.tightest.remaining : 0),
    "X-RateLimit-Reset": String(result.tightest.reset),
  };
  if (!result.allowed) h["Retry-After"] = String(result.retryAfter);
  return h;
}

/** A used bucket as stored outside its actor (actors/ip/stored-buckets.ts), epoch ms. */
export interface StoredBucket {
  id: string;
  windowStart: number;
  windowEnd: number;
  count: number;
}

/**
 * In-memory bucket table for one owner actor. Buckets live in memory; the failed-log-in buckets are also written
 * on every change and the others handed over on a clean stop (actors/ip/stored-buckets.ts): a kill -9 still refills
 * those others. The clock is injected for tests.
 */
export class BucketTable {
  private readonly states = new Map<string, BucketState & { windowMs: number }>();

  constructor(private readonly clock: () => number = Date.now) {}

  admit(specs: readonly BucketSpec[], cost = 1): AdmitResult {
    const now = this.clock();
    const n = specs.length;
    if (n === 0 || !(cost > 0)) return admit(specs.map((x) => this.bucket(x)), now, cost); // it throws the error
    // The common case, every bucket has room, without building Bucket objects: the same arithmetic as `admit`
    // (window rolled over when ended, else counted on), consumed in place. A refusal takes the pure path.
    const starts: number[] = new Array(n);
    const counts: number[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const s = specs[i]!;
      const st = this.states.get(s.id);
      const ended = !st || now >= st.windowStart + s.windowMs;
      starts[i] = ended ? now : st.windowStart;
      counts[i] = (ended ? 0 : st.count) + cost;
      if (counts[i]! > s.limit) return admit(specs.map((x) => this.bucket(x)), now, cost);
    }
    const states: BucketState[] = new Array(n);
    const views: BucketView[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const s = specs[i]!;
      const state = { windowStart: starts[i]!, count: counts[i]! };
      states[i] = state;
      views[i] = view(s, state);
      // updated in place: a fresh object per request stored in a long-lived table is garbage-collector work
      const stored = this.states.get(s.id);
      if (stored) {
        stored.windowStart = state.windowStart;
        stored.count = state.count;
        stored.windowMs = s.windowMs;
      } else this.states.set(s.id, { windowStart: state.windowStart, count: state.count, windowMs: s.windowMs });
    }
    return { allowed: true, tightest: n === 1 ? views[0]! : tightestOf(views), views, states };
  }

  /**
   * `admit` for a caller that needs only the headers' bucket: when every bucket has room, consumes from all and
   * returns the tightest one's limit/remaining/reset (what `admit(...).tightest` says, without the per-bucket
   * views and states); when any bucket would refuse, consumes nothing and returns null (call `admit` for the
   * refusal's details). The agent actor's hot path: one object per admitted request instead of six.
   */
  admitTightest(specs: readonly BucketSpec[], cost = 1): { limit: number; remaining: number; reset: number } | null {
    const now = this.clock();
    const n = specs.length;
    if (n === 0 || !(cost > 0)) return null;
    for (let i = 0; i < n; i++) {
      const s = specs[i]!;
      const st = this.states.get(s.id);
      const count = (!st || now >= st.windowStart + s.windowMs ? 0 : st.count) + cost;
      if (count > s.limit) return null;
    }
    let limit = 0;
    let remaining = 0;
    let reset = 0;
    for (let i = 0; i < n; i++) {
      const s = specs[i]!;
      let st = this.states.get(s.id);
      if (!st) this.states.set(s.id, (st = { windowStart: now, count: 0, windowMs: s.windowMs }));
      else if (now >= st.windowStart + s.windowMs) {
        st.windowStart = now;
        st.count = 0;
      }
      st.count += cost;
      st.windowMs = s.windowMs;
      const r = Math.max(0, s.limit - st.count);
      const e = Math.ceil((st.windowStart + s.windowMs) / 1000);
      // tightestOf's order: fewest remaining, then the later reset, then the smaller limit; the first on a tie
      if (i === 0 || r < remaining || (r === remaining && (e > reset || (e === reset && s.limit < limit)))) {
        limit = s.limit;
        remaining = r;
        reset = e;
      }
    }
    return { limit, remaining, reset };
  }

  /** What `admit` would answer now, consuming nothing (the durable log-in admission decides on the stored rows). */
  decide(specs: readonly BucketSpec[], cost = 1): AdmitResult {
    return admit(specs.map((x) => this.bucket(x)), this.clock(), cost);
  }

  /** Sets a bucket's state as read from storage (an activation's load, a durable admission's row); null forgets it. */
  put(id: string, windowMs: number, state: BucketState | null): void {
    if (state) this.states.set(id, { windowStart: state.windowStart, count: state.count, windowMs });
    else this.states.delete(id);
  }

  /**
   * What the activation's load read from storage, per bucket (`load`): the base a later `merge` subtracts to find
   * what this activation counted itself. Absent until something is loaded.
   */
  private loaded?: Map<string, BucketState>;

  /** `put` of a row read at the activation's start, remembered as the base of a later `merge`. */
  load(id: string, windowMs: number, state: BucketState): void {
    this.put(id, windowMs, state);
    (this.loaded ??= new Map()).set(id, { windowStart: state.windowStart, count: state.count });
  }

  /**
   * Folds a row read after the activation started (a previous owner's hand-over that committed after this
   * activation's load: a partition moving here) into the bucket: the row's count plus what this activation
   * counted itself since its load (its count minus what it loaded into that window), in the row's window when that
   * is the same window or an earlier one still running (every unit counted here came after the row's window began).
   * A row whose window has ended changes nothing. Merging the same row again adds nothing.
   */
  merge(id: string, windowMs: number, row: BucketState): void {
    const now = this.clock();
    if (now >= row.windowStart + windowMs) return;
    const st = this.states.get(id);
    if (!st || now >= st.windowStart + st.windowMs) return this.load(id, windowMs, row);
    if (row.windowStart <= st.windowStart) {
      const base = this.loaded?.get(id);
      const own = st.count - (base && base.windowStart === st.windowStart ? base.count : 0);
      this.put(id, windowMs, { windowStart: row.windowStart, count: Math.max(0, row.count + own) });
      // the row is the new base: a later merge adds only what is counted here from now on to a newer row
      (this.loaded ??= new Map()).set(id, { windowStart: row.windowStart, count: row.count });
    } else if (row.count >= st.count) this.load(id, windowMs, row); // a later window than ours: the fuller one
  }

  /** Buckets with units used in a window that has not ended: what a restart would otherwise refill. */
  *used(): Generator<StoredBucket> {
    const now = this.clock();
    for (const [id, st] of this.states) {
      const windowEnd = st.windowStart + st.windowMs;
      if (st.count > 0 && now < windowEnd) yield { id, windowStart: st.windowStart, windowEnd, count: st.count };
    }
  }

  /** A spec with a copy of its stored state, as the pure functions take it. */
  private bucket(spec: BucketSpec): Bucket {
    const st = this.states.get(spec.id);
    return { id: spec.id, limit: spec.limit, windowMs: spec.windowMs, state: st ? { windowStart: st.windowStart, count: st.count } : undefined };
  }

  release(specs: readonly BucketSpec[], consumedAt: number, cost = 1): void {
    const now = this.clock();
    for (const s of specs) {
      const st = this.states.get(s.id);
      // Units taken in a window that has since rolled over are not credited to the new one.
      if (!st || consumedAt < st.windowStart) continue;
      const next = release({ ...s, state: st }, st.windowStart, now, cost);
      this.states.set(s.id, { ...next, windowMs: s.windowMs });
    }
  }

  peek(spec: BucketSpec): BucketView {
    const st = this.states.get(spec.id);
    return view(spec, currentState(st ? { ...spec, state: st } : spec, this.clock()));
  }

  /**
   * The tightest of `specs` as they stand, consuming nothing (`tightestOf` over `peek`): the headers of a request
   * that no layer counts (MCP protocol messages other than tools/call and initialize; docs/access.md).
   */
  peekTightest(specs: readonly BucketSpec[]): { limit: number; remaining: number; reset: number } {
    const t = tightestOf(specs.map((s) => this.peek(s)));
    return { limit: t.limit, remaining: t.remaining, reset: t.reset };
  }

  /** Drops buckets whose window has ended (they would start fresh anyway). Returns how many were dropped. */
  sweep(): number {
    const now = this.clock();
    let dropped = 0;
    for (const [id, st] of this.states) {
      if (now >= st.windowStart + st.windowMs) {
        this.states.delete(id);
        dropped++;
      }
    }
    return dropped;
  }

  get size(): number {
    return this.states.size;
  }
}
