/**
 * Pending markers of failed turns that this host could not delete (host.ts `Turn.dropMarker`: the database did not
 * answer the DELETE). Such a marker is dead to this host at once (its run is no longer tracked), but every other host
 * takes it for live while this host is a member, until its time passes: up to the caller's deadline + 120 s, about
 * 2 min 10 s after the turn began. Meanwhile it holds the actor back (503 actor_unavailable) on any other host its
 * partition moves to (a host joining). So the host keeps them here and deletes them once the database answers again:
 * on a timer with backoff, at once when one of its statements succeeds (`kick`), and before it loads that actor
 * itself (`beforeLoad`).
 *
 * The list is bounded (`max`): a marker left out only waits for its own time, as before this list existed. One
 * marker is one run (its token is unique), and the delete matches the token and `reply IS NULL` only: a reply, or
 * a later run's marker of the same message, is never touched, and repeating the delete is harmless.
 */
import { LoopBackoff } from "../../infra/backoff.ts";
import type { Sql } from "../../infra/db.ts";
import { inRequest, type Logger } from "../../infra/log.ts";
import type { Clock } from "./clock.ts";

export interface LeftoverMarker {
  kind: string;
  id: string;
  msgId: string;
  /** The failed run's token (`<host id>/<random>`), unique per run. */
  token: string;
  /** When the marker has expired anyway (this host's wall clock; the database's may differ by a little). */
  until: number;
}

export interface LeftoverMarkerOptions {
  /** Most markers kept (default 1000); past it the oldest is left to expire. */
  max?: number;
  /** First retry after a failed delete (default 200 ms). */
  baseMs?: number;
  /** Longest wait between retries while the database does not answer (default 1 s). */
  maxMs?: number;
}

export class LeftoverMarkers {
  /** By token, oldest first (Map keeps insertion order). */
  private readonly markers = new Map<string, LeftoverMarker>();
  private readonly backoff: LoopBackoff;
  private readonly max: number;
  private readonly baseMs: number;
  private timer?: ReturnType<typeof setTimeout>;
  private retrying = false;
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly wallClock: Clock,
    opts: LeftoverMarkerOptions = {},
  ) {
    this.max = opts.max ?? 1000;
    this.baseMs = opts.baseMs ?? 200;
    // logs the first failure of a burst, then at most one summary every 30 s, then "recovered"
    this.backoff = new LoopBackoff("deleting failed turns' pending markers", log, { baseMs: this.baseMs, maxMs: opts.maxMs ?? 1000 });
  }

  get size(): number {
    return this.markers.size;
  }

  /** Keeps a marker whose delete failed; its delete is retried after the backoff's delay. */
  add(marker: LeftoverMarker): void {
    if (this.stopped) return;
    this.prune();
    if (this.markers.size >= this.max) {
      const oldest = this.markers.values().next().value as LeftoverMarker;
      this.markers.delete(oldest.token);
      this.log.warn("too many pending markers left to delete; the oldest waits for its own time", { kind: oldest.kind, id: oldest.id, max: this.max });
    }
    this.markers.set(marker.token, marker);
    if (!this.timer && !this.retrying) this.schedule(this.baseMs);
  }

  /** A statement of this host just succeeded: the database answers again, so retry now rather than after the delay. */
  kick(): void {
    if (this.markers.size === 0 || this.retrying || this.stopped) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    // host-wide work, not the turn's that kicked it: its lines name no request (infra/log.ts)
    inRequest(undefined, () => void this.retry());
  }

  /**
   * Before this host loads `kind/id`: its leftover markers are deleted first (a failure is left to the timer; the
   * load meets the same database, and this host never waits for its own dead markers).
   */
  async beforeLoad(kind: string, id: string): Promise<void> {
    const mine = [...this.markers.values()].filter((m) => m.kind === kind && m.id === id);
    if (mine.length === 0) return;
    try {
      await this.delete(mine);
    } catch {
      // the timer retries
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    // outside the scope of the turn that left the first marker: the retries serve every marker, not its request
    this.timer = inRequest(undefined, () =>
      setTimeout(() => {
        this.timer = undefined;
        void this.retry();
      }, delayMs),
    );
  }

  private async retry(): Promise<void> {
    this.retrying = true;
    let next: number | undefined;
    try {
      this.prune();
      if (this.markers.size === 0) return;
      await this.delete([...this.markers.values()]);
      this.backoff.succeeded();
    } catch (err) {
      next = this.backoff.failed(err);
    } finally {
      this.retrying = false;
    }
    // markers added while this ran, or the failed ones
    if (this.markers.size > 0 && !this.timer) this.schedule(next ?? this.baseMs);
  }

  private async delete(markers: LeftoverMarker[]): Promise<void> {
    await this.sql`
      DELETE FROM actor_inbox i
      USING unnest(${markers.map((m) => m.kind)}::text[], ${markers.map((m) => m.id)}::text[], ${markers.map((m) => m.msgId)}::text[],
                   ${markers.map((m) => m.token)}::text[]) AS m(kind, id, msg_id, turn)
      WHERE i.kind = m.kind AND i.id = m.id AND i.msg_id = m.msg_id AND i.pending_turn = m.turn AND i.reply IS NULL`;
    for (const m of markers) if (this.markers.get(m.token) === m) this.markers.delete(m.token);
    this.log.info("deleted failed turns' pending markers once the database answered", { count: markers.length });
  }

  /** Markers whose time has passed hold nothing back any more (the inbox sweep removes their rows). */
  private prune(): void {
    const now = this.wallClock.now();
    for (const [token, m] of this.markers) if (m.until <= now) this.markers.delete(token);
  }
}
