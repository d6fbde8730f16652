/**
 * When to retry a webhook delivery, and when to stop trying an endpoint for a while. Pure; time and randomness
 * are passed in.
 *
 * Retries: exponential ceilings 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, then 24 h, with FULL jitter: retry n
 * waits a uniformly random time in [0, ceiling(n)] (at least MIN_RETRY_DELAY_MS). Full jitter spreads the herd
 * when a receiver comes back after an outage: thousands of queued deliveries do not all land in the same second.
 * Retries continue until 3 days after the first attempt (or MAX_ATTEMPTS), then the delivery is dead-lettered
 * and stays visible in the dashboard for manual replay. A delivery the breaker holds before any attempt counts its
 * 3 days from when it was first due (audit M-3; index.ts `holdForBreaker`).
 *
 * Circuit breaker per endpoint: CLOSED → OPEN after `failureThreshold` consecutive failed attempts; while OPEN
 * nothing is sent (due deliveries are pushed to the reopen time, their attempt count unchanged); after the
 * cool-down one probe is allowed (HALF_OPEN): success closes the breaker, failure reopens it with a doubled
 * cool-down (capped).
 *
 * Failure streak: from the first failed attempt after the last 2xx; a failed attempt DISABLE_AFTER_FAILING_MS (5 days)
 * or more into it disables the endpoint (index.ts `recordAttempts`) until the merchant enables it. Silence ends a
 * streak (review X-3): a new event's first attempt that fails after the endpoint had nothing open (no delivery owed
 * to it) for STREAK_QUIET_MS starts a new streak, because the old one says nothing about the receiver since then.
 */

/** Per-attempt timeout: connect + send + response headers. A slow receiver counts as a failure. */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10_000;

const MIN = 60_000;
const HOUR = 60 * MIN;

/** Upper bound of the wait before retry n (1-based); the last value repeats. */
export const RETRY_CEILINGS_MS: readonly number[] = [1 * MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR];
/** Nothing is retried later than this after the first attempt (or the breaker's first hold of an unattempted one). */
export const RETRY_HORIZON_MS = 72 * HOUR;
/** Hard cap on attempts (first attempt included), whatever the jitter draws. */
export const MAX_ATTEMPTS = 15;
export const MIN_RETRY_DELAY_MS = 5_000;
/**
 * An endpoint with no 2xx answer for this long, counted from the first failed attempt of its current streak, is
 * disabled at its next failed attempt (Svix's period; Stripe and GitHub disable too). Longer than the 72 h retry
 * horizon, and a streak restarts after STREAK_QUIET_MS without anything owed to the endpoint, so a weekend outage
 * costs dead letters, not the endpoint, even when the receiver's next event after idle days meets one transient
 * failure (review X-3: the streak was never ended by silence, so that failure disabled it).
 */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * HOUR;
/**
 * Quiet that ends a failure streak: no delivery of the endpoint open (pending or failed) for this long before a new
 * event's first attempt fails. Nothing was tried meanwhile, so the receiver may have come back unseen. Above the
 * breaker's longest cool-down (1 h) and the attempt lease (40 s), so an endpoint being retried or probed is never
 * quiet (its held deliveries stay open anyway); far below the 72 h a delivery stays open, so a receiver that is down
 * while events keep coming (one at least every ~2 days) always has one open, is never quiet, and is still disabled
 * 5 days into its outage.
 */
export const STREAK_QUIET_MS = 6 * HOUR;

export function retryCeilingMs(retryNumber: number): number {
  if (!Number.isInteger(retryNumber) || retryNumber < 1) throw new Error("retryNumber starts at 1");
  return RETRY_CEILINGS_MS[Math.min(retryNumber, RETRY_CEILINGS_MS.length) - 1]!;
}

/** Full jitter: uniform in [0, ceiling], floored at MIN_RETRY_DELAY_MS. `random` returns [0, 1). */
export function retryDelayMs(retryNumber: number, random: () => number = Math.random): number {
  const ceiling = retryCeilingMs(retryNumber);
  const r = Math.min(1, Math.max(0, random()));
  return Math.max(MIN_RETRY_DELAY_MS, Math.floor(r * ceiling));
}

/** Only a 2xx answer is a delivery; anything else (including redirects, which are never followed) is retried. */
export function isDelivered(status: number): boolean {
  return status >= 200 && status < 300;
}

export type NextStep =
  | { kind: "retry"; at: number; delayMs: number; attempt: number }
  | { kind: "dead_letter"; reason: "horizon" | "max_attempts" };

export interface RetryInput {
  /** Attempts already made (>= 1: this is called after a failed attempt). */
  attemptsMade: number;
  /** Epoch ms of the first attempt. */
  firstAttemptAt: number;
  /** Epoch ms of the failure just observed. */
  now: number;
  random?: () => number;
}

export function nextAttempt(input: RetryInput): NextStep {
  if (input.attemptsMade >= MAX_ATTEMPTS) return { kind: "dead_letter", reason: "max_attempts" };
  const delayMs = retryDelayMs(input.attemptsMade, input.random);
  const at = input.now + delayMs;
  if (at > input.firstAttemptAt + RETRY_HORIZON_MS) return { kind: "dead_letter", reason: "horizon" };
  return { kind: "retry", at, delayMs, attempt: input.attemptsMade + 1 };
}

// ----------------------------------------------------------------------------------------- circuit breaker

export interface BreakerConfig {
  failureThreshold: number;
  cooldownMs: number;
  maxCooldownMs: number;
}

export const DEFAULT_BREAKER: BreakerConfig = { failureThreshold: 5, cooldownMs: 5 * MIN, maxCooldownMs: HOUR };

export type BreakerState =
  | { status: "closed"; consecutiveFailures: number }
  | { status: "open"; openedAt: number; cooldownMs: number }
  | { status: "half_open"; probeStartedAt: number; cooldownMs: number };

export const CLOSED_BREAKER: BreakerState = { status: "closed", consecutiveFailures: 0 };

export interface BreakerDecision {
  allowed: boolean;
  state: BreakerState;
  /** When refused: the earliest time a delivery may be tried again. */
  retryAt?: number;
}

/**
 * May a delivery to this endpoint be attempted now? Moving OPEN → HALF_OPEN is part of the answer (the caller
 * stores `state`); in HALF_OPEN only the one probe is allowed until it reports, or until it is presumed lost
 * after another cool-down.
 */
export function breakerAllows(state: BreakerState, now: number, cfg: BreakerConfig = DEFAULT_BREAKER): BreakerDecision {
  switch (state.status) {
    case "closed":
      return { allowed: true, state };
    case "open": {
      const reopenAt = state.openedAt + state.cooldownMs;
      if (now < reopenAt) return { allowed: false, state, retryAt: reopenAt };
      return { allowed: true, state: { status: "half_open", probeStartedAt: now, cooldownMs: state.cooldownMs } };
    }
    case "half_open": {
      const probeLostAt = breakerProbeLostAt(state, cfg);
      if (now < probeLostAt) return { allowed: false, state, retryAt: probeLostAt };
      return { allowed: true, state: { ...state, probeStartedAt: now } };
    }
  }
}

/** When a half-open breaker's probe is presumed lost (another probe may go): one cool-down after it started. */
export function breakerProbeLostAt(state: Extract<BreakerState, { status: "half_open" }>, cfg: BreakerConfig = DEFAULT_BREAKER): number {
  return state.probeStartedAt + Math.min(state.cooldownMs, cfg.maxCooldownMs);
}

export function breakerOnSuccess(_state: BreakerState): BreakerState {
  return CLOSED_BREAKER;
}

export function breakerOnFailure(state: BreakerState, now: number, cfg: BreakerConfig = DEFAULT_BREAKER): BreakerState {
  switch (state.status) {
    case "closed": {
      const failures = state.consecutiveFailures + 1;
      if (failures >= cfg.failureThreshold) return { status: "open", openedAt: now, cooldownMs: cfg.cooldownMs };
      return { status: "closed", consecutiveFailures: failures };
    }
    case "half_open":
      return { status: "open", openedAt: now, cooldownMs: Math.min(state.cooldownMs * 2, cfg.maxCooldownMs) };
    case "open":
      // A late result of an attempt started before the breaker opened: keep it open, restart the clock.
      return { status: "open", openedAt: now, cooldownMs: state.cooldownMs };
  }
}

// ------------------------------------------------------------------------------------------- failure streak

/**
 * The start of the failure streak after one more recorded outcome: a 2xx ends it, a failure starts it if none runs.
 * `failingSince` is epoch ms or null (no streak).
 */
export function streakAfter(failingSince: number | null, delivered: boolean, at: number): number | null {
  if (delivered) return null;
  return failingSince ?? at;
}

/** Whether a failure recorded at `failedAt` ends a streak long enough to disable the endpoint. */
export function streakDisables(failingSince: number | null, failedAt: number, afterMs: number = DISABLE_AFTER_FAILING_MS): boolean {
  return failingSince !== null && failedAt - failingSince >= afterMs;
}
