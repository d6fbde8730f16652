/**
 * LoopBackoff (infra/backoff.ts) spaces out a failing background loop and logs it once in a while. A programming
 * error in a loop fails on every tick just like an outage (review R2-F7): the first failure of each burst is logged
 * with its stack so it can be found, at error level when it is not the database being unavailable; the summaries
 * in between stay rate-limited and carry no stack.
 */
import { expect, test } from "bun:test";
import { LoopBackoff } from "../../infra/backoff.ts";
import type { LogFields, Logger } from "../../infra/log.ts";

function capture() {
  const lines: { level: string; msg: string; fields: LogFields }[] = [];
  const at = (level: string) => (msg: string, fields: LogFields = {}) => void lines.push({ level, msg, fields });
  const log: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => log };
  return { log, lines };
}

test("the first failure of each burst is logged with its stack, the rate-limited summaries without it", () => {
  let t = 0;
  const { log, lines } = capture();
  const b = new LoopBackoff("fan-out", log, { logEveryMs: 30_000, now: () => t });
  const bug = new TypeError("cannot read properties of undefined (reading 'slug')");
  b.failed(bug);
  t += 1000;
  b.failed(bug); // within 30 s: counted, not logged
  t += 30_000;
  b.failed(bug); // the next summary
  expect(lines.map((l) => [l.level, l.msg, l.fields.failures, l.fields.suppressed])).toEqual([
    ["error", "fan-out failed; retrying with backoff", 1, 0],
    ["error", "fan-out failed; retrying with backoff", 3, 1],
  ]);
  expect(lines[0].fields.stack).toBe(bug.stack);
  expect(lines[0].fields.stack).toContain("loop-backoff.test.ts");
  expect(lines[1].fields.stack).toBeUndefined();

  // recovered, then a new burst: its first failure is logged at once, with its stack again
  b.succeeded();
  t += 10;
  const again = new RangeError("invalid time value");
  b.failed(again);
  expect(lines.map((l) => l.msg)).toEqual([
    "fan-out failed; retrying with backoff",
    "fan-out failed; retrying with backoff",
    "fan-out recovered",
    "fan-out failed; retrying with backoff",
  ]);
  expect(lines[3].fields.stack).toBe(again.stack);
});

test("an outage of the database is a warning, with the stack of its first failure only", () => {
  let t = 0;
  const { log, lines } = capture();
  const b = new LoopBackoff("reminder poll", log, { logEveryMs: 30_000, now: () => t });
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
  for (let i = 0; i < 5; i++, t += 10_000) b.failed(refused);
  expect(lines.map((l) => [l.level, l.fields.databaseUnavailable, l.fields.failures, typeof l.fields.stack])).toEqual([
    ["warn", true, 1, "string"],
    ["warn", true, 4, "undefined"],
  ]);
});
