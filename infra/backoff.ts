/**
 * Failure handling for background loops (reminder poll, webhook fan-out, search catch-up): while their database is
 * down they fail on every tick. Without this, each tick logged a warning (5 a second from the fan-out alone) and
 * tried again at full rate. A LoopBackoff spaces the attempts out (exponential, capped) and logs the first failure,
 * then at most one summary per `logEveryMs` with how many were left out, then one line when the loop recovers.
 * The first failure of each burst is logged with its stack: a programming error in a loop (a TypeError in the
 * fan-out) fails on every tick just like an outage, and without the stack it could not be found. A failure that is
 * not the database being unavailable is logged at error level.
 */
import { isDatabaseUnavailable } from "./db.ts";
import type { Logger } from "./log.ts";

export interface LoopBackoffOptions {
  /** Delay after the first failure. */
  baseMs?: number;
  /** Longest delay between attempts while failing. */
  maxMs?: number;
  /** At most one warning per this many ms while failing. */
  logEveryMs?: number;
  now?: () => number;
}

export class LoopBackoff {
  private failures = 0;
  private suppressed = 0;
  private lastLogAt = -Infinity;
  private retryAt = 0;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly logEveryMs: number;
  private readonly now: () => number;

  constructor(
    private readonly what: string,
    private readonly log: Logger,
    opts: LoopBackoffOptions = {},
  ) {
    this.baseMs = opts.baseMs ?? 250;
    this.maxMs = opts.maxMs ?? 5_000;
    this.logEveryMs = opts.logEveryMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  /** Consecutive failures so far (0 when the last attempt succeeded). */
  get failing(): number {
    return this.failures;
  }

  /** False while a failed loop should leave this tick out (its next attempt is not due yet). */
  due(): boolean {
    return this.now() >= this.retryAt;
  }

  /** Records a failure; returns how long to wait before the next attempt (ms). */
  failed(err: unknown): number {
    this.failures++;
    const delay = Math.min(this.baseMs * 2 ** (this.failures - 1), this.maxMs);
    this.retryAt = this.now() + delay;
    const now = this.now();
    if (now - this.lastLogAt >= this.logEveryMs) {
      this.lastLogAt = now;
      const databaseUnavailable = isDatabaseUnavailable(err);
      const fields: Record<string, unknown> = {
        error: err as Error,
        code: (err as { code?: unknown } | null)?.code,
        databaseUnavailable,
        failures: this.failures,
        suppressed: this.suppressed,
        retryInMs: delay,
      };
      // the summaries of a burst repeat what its first line said; only the first carries the (long) stack
      if (this.failures === 1) fields.stack = (err as Error | null)?.stack;
      if (databaseUnavailable) this.log.warn(`${this.what} failed; retrying with backoff`, fields);
      else this.log.error(`${this.what} failed; retrying with backoff`, fields);
      this.suppressed = 0;
    } else {
      this.suppressed++;
    }
    return delay;
  }

  /** Records a success: the next failure starts from the base delay again (and is logged). */
  succeeded(): void {
    if (this.failures > 0) this.log.info(`${this.what} recovered`, { failures: this.failures });
    this.failures = 0;
    this.suppressed = 0;
    this.retryAt = 0;
    this.lastLogAt = -Infinity;
  }
}
