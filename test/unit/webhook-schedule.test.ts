import { describe, expect, test } from "bun:test";
import {
  breakerAllows,
  breakerOnFailure,
  breakerOnSuccess,
  CLOSED_BREAKER,
  DEFAULT_BREAKER,
  isDelivered,
  MAX_ATTEMPTS,
  MIN_RETRY_DELAY_MS,
  nextAttempt,
  RETRY_HORIZON_MS,
  retryCeilingMs,
  retryDelayMs,
  WEBHOOK_ATTEMPT_TIMEOUT_MS,
  type BreakerState,
} from "../../actors/webhook/schedule.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2025, 2, 1);

describe("retry schedule", () => {
  test("the ceilings are 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, then 24 h", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 12].map(retryCeilingMs)).toEqual([
      MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR, 24 * HOUR, 24 * HOUR,
    ]);
  });

  test("full jitter draws the delay uniformly between the floor and the ceiling", () => {
    expect(retryDelayMs(3, () => 0.999999)).toBe(Math.floor(0.999999 * 30 * MIN));
    expect(retryDelayMs(3, () => 0.5)).toBe(15 * MIN);
    expect(retryDelayMs(3, () => 0)).toBe(MIN_RETRY_DELAY_MS);
    for (let i = 0; i < 1000; i++) {
      const d = retryDelayMs(4);
      expect(d).toBeGreaterThanOrEqual(MIN_RETRY_DELAY_MS);
      expect(d).toBeLessThanOrEqual(2 * HOUR);
    }
  });

  test("with the largest draws the attempts land at 1 min, 6 min, 36 min, … and stop within 3 days", () => {
    const random = () => 1;
    let now = T0;
    let attempts = 1;
    const at: number[] = [];
    for (;;) {
      const step = nextAttempt({ attemptsMade: attempts, firstAttemptAt: T0, now, random });
      if (step.kind === "dead_letter") {
        expect(step.reason).toBe("horizon");
        break;
      }
      expect(step.attempt).toBe(attempts + 1);
      now = step.at;
      attempts = step.attempt;
      at.push((now - T0) / MIN);
    }
    expect(at).toEqual([1, 6, 36, 156, 516, 1236, 2676, 4116]);
    expect(at.at(-1)! * MIN).toBeLessThanOrEqual(RETRY_HORIZON_MS);
  });

  test("a retry that would fall after 3 days from the first attempt is a dead letter", () => {
    const step = nextAttempt({ attemptsMade: 8, firstAttemptAt: T0, now: T0 + 71 * HOUR, random: () => 0.1 });
    expect(step).toEqual({ kind: "dead_letter", reason: "horizon" });
  });

  test("no more than MAX_ATTEMPTS attempts are made even with tiny draws", () => {
    let attempts = 1;
    let now = T0;
    for (;;) {
      const step = nextAttempt({ attemptsMade: attempts, firstAttemptAt: T0, now, random: () => 0 });
      if (step.kind === "dead_letter") {
        expect(step.reason).toBe("max_attempts");
        break;
      }
      attempts = step.attempt;
      now = step.at;
    }
    expect(attempts).toBe(MAX_ATTEMPTS);
  });

  test("each attempt has a 10 second timeout", () => {
    expect(WEBHOOK_ATTEMPT_TIMEOUT_MS).toBe(10_000);
  });

  test("only a 2xx answer counts as delivered", () => {
    expect([200, 201, 204, 299].every(isDelivered)).toBe(true);
    expect([199, 301, 302, 400, 410, 429, 500, 503].some(isDelivered)).toBe(false);
  });
});

describe("per-endpoint circuit breaker", () => {
  const cfg = DEFAULT_BREAKER;

  function failTimes(n: number, state: BreakerState = CLOSED_BREAKER, at = T0): BreakerState {
    let s = state;
    for (let i = 0; i < n; i++) s = breakerOnFailure(s, at, cfg);
    return s;
  }

  test("a closed breaker allows deliveries", () => {
    expect(breakerAllows(CLOSED_BREAKER, T0, cfg).allowed).toBe(true);
  });

  test("it stays closed below the failure threshold", () => {
    expect(failTimes(cfg.failureThreshold - 1)).toEqual({ status: "closed", consecutiveFailures: cfg.failureThreshold - 1 });
  });

  test("a success resets the failure count", () => {
    const s = breakerOnSuccess(failTimes(cfg.failureThreshold - 1));
    expect(failTimes(cfg.failureThreshold - 1, s).status).toBe("closed");
  });

  test("it opens after the threshold of consecutive failures and refuses until the cool-down ends", () => {
    const open = failTimes(cfg.failureThreshold);
    expect(open).toEqual({ status: "open", openedAt: T0, cooldownMs: cfg.cooldownMs });
    const d = breakerAllows(open, T0 + cfg.cooldownMs - 1, cfg);
    expect(d.allowed).toBe(false);
    expect(d.retryAt).toBe(T0 + cfg.cooldownMs);
  });

  test("after the cool-down it lets exactly one probe through (half-open)", () => {
    const open = failTimes(cfg.failureThreshold);
    const probe = breakerAllows(open, T0 + cfg.cooldownMs, cfg);
    expect(probe.allowed).toBe(true);
    expect(probe.state.status).toBe("half_open");
    expect(breakerAllows(probe.state, T0 + cfg.cooldownMs + 1000, cfg).allowed).toBe(false);
  });

  test("a successful probe closes the breaker", () => {
    const probe = breakerAllows(failTimes(cfg.failureThreshold), T0 + cfg.cooldownMs, cfg);
    expect(breakerOnSuccess(probe.state)).toEqual(CLOSED_BREAKER);
  });

  test("a failed probe reopens it with a doubled cool-down, capped", () => {
    const probeAt = T0 + cfg.cooldownMs;
    const probe = breakerAllows(failTimes(cfg.failureThreshold), probeAt, cfg);
    const reopened = breakerOnFailure(probe.state, probeAt + 500, cfg);
    expect(reopened).toEqual({ status: "open", openedAt: probeAt + 500, cooldownMs: 2 * cfg.cooldownMs });
    let s: BreakerState = reopened;
    for (let i = 0; i < 10; i++) {
      if (s.status !== "open") throw new Error("expected open");
      const p = breakerAllows(s, s.openedAt + s.cooldownMs, cfg);
      s = breakerOnFailure(p.state, s.openedAt + s.cooldownMs, cfg);
    }
    expect(s.status === "open" && s.cooldownMs).toBe(cfg.maxCooldownMs);
  });

  test("a probe that never reports is presumed lost after a cool-down and another is allowed", () => {
    const probeAt = T0 + cfg.cooldownMs;
    const probe = breakerAllows(failTimes(cfg.failureThreshold), probeAt, cfg);
    const again = breakerAllows(probe.state, probeAt + cfg.cooldownMs, cfg);
    expect(again.allowed).toBe(true);
    expect(again.state).toEqual({ status: "half_open", probeStartedAt: probeAt + cfg.cooldownMs, cooldownMs: cfg.cooldownMs });
  });
});
