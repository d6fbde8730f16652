/**
 * A log line written in a request's scope names the request (`requestId`), whichever logger writes it; outside one,
 * or in the explicit "no request" scope of a reminder turn, it has none (infra/log.ts, docs/operations.md).
 */
import { afterEach, expect, test } from "bun:test";
import { currentRequestId, inRequest, log, setLogLevel, setLogSink } from "../../infra/log.ts";

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  setLogLevel("error");
});

function capture(): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  restore = setLogSink((l) => void lines.push(JSON.parse(l)));
  setLogLevel("info");
  return lines;
}

test("a line in a request's scope has its requestId, across awaits and timers, and none outside it", async () => {
  const lines = capture();
  const child = log.child({ component: "probe" });
  await inRequest("scope-test-0001", async () => {
    child.info("first");
    await Bun.sleep(1);
    await new Promise<void>((r) => setTimeout(() => (child.warn("in a timer"), r()), 1));
    inRequest(undefined, () => child.info("no request here"));
  });
  child.info("after");
  expect(lines.map((l) => [l.msg, l.requestId])).toEqual([
    ["first", "scope-test-0001"],
    ["in a timer", "scope-test-0001"],
    ["no request here", undefined],
    ["after", undefined],
  ]);
  expect(lines[0]).toMatchObject({ component: "probe", level: "info" });
  expect(currentRequestId()).toBeUndefined();
});

test("a requestId the call site gives itself wins over the scope's", () => {
  const lines = capture();
  inRequest("scope-test-0002", () => log.warn("explicit", { requestId: "given-by-caller-1" }));
  expect(lines[0]!.requestId).toBe("given-by-caller-1");
});
