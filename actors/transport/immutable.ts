/**
 * Immutable messages on the in-process bus (define-actor.ts `immutable`): passed by reference, not copied.
 *
 * Copying is what keeps an in-process actor honest: it never shares a mutable object with its caller, and nothing
 * crosses that NATS would not carry. For the few hot messages declared immutable, the same two guarantees are
 * checked instead of paid for on every message — as Akka does with `serialize-messages` in tests: under `bun test`
 * (NODE_ENV=test) or with ACTOR_CHECK_IMMUTABLE=1, every such body and reply must come out of a JSON round trip
 * unchanged, and is deep-frozen, so a caller or handler that mutates what the other side holds throws in the test
 * suite instead of corrupting state quietly in production.
 */
import { jsonCopy } from "./json-copy.ts";

const CHECK = process.env.NODE_ENV === "test" || process.env.ACTOR_CHECK_IMMUTABLE === "1";

/** `v` itself (checked and frozen when checks are on). Throws a TypeError naming the problem when a check fails. */
export function checkedShare<T>(v: T): T {
  if (!CHECK) return v;
  return checkImmutable(v);
}

/** The check itself, whatever the environment (unit tests call it directly). */
export function checkImmutable<T>(v: T): T {
  if (v !== undefined && !Bun.deepEquals(jsonCopy(v), v, true)) {
    throw new TypeError(`immutable actor message does not survive JSON unchanged: ${safeText(v)}`);
  }
  return deepFreeze(v);
}

/** Freezes plain objects and arrays all the way down; anything with another prototype is refused (JSON drops it). */
function deepFreeze<T>(v: T): T {
  if (typeof v !== "object" || v === null) return v;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) {
    throw new TypeError(`immutable actor message holds a non-plain object: ${safeText(v)}`);
  }
  if (Object.isFrozen(v)) return v;
  Object.freeze(v);
  for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  return v;
}

function safeText(v: unknown): string {
  try {
    return JSON.stringify(v)?.slice(0, 200) ?? String(v);
  } catch {
    return "(not serialisable)";
  }
}
