/**
 * Audit M-10: fresh X-Request-Id values are a random per-process prefix plus a visible 48-bit counter
 * (gateway/plugins/request-id.ts), so any caller reads a gateway's traffic volume off two of its own answers:
 * the difference of their last 12 hex digits is the number of requests that gateway answered in between (and a new
 * prefix is a restart; distinct prefixes count the gateways). That is the business volume audit X-5 put behind
 * METRICS_TOKEN (docs/operations.md "Who may scrape /metrics"). Uniqueness does not need the order visible: a
 * per-process keyed permutation of the counter (e.g. a 4-round Feistel over the two 24-bit halves with Math.imul)
 * keeps ids unique and as cheap.
 * Run: `bun test/run.ts test/unit/request-id-counter-volume.test.ts`.
 */
import { expect, test } from "bun:test";
import { newRequestId } from "../../gateway/plugins/request-id.ts";

test("consecutive fresh request ids do not reveal how many ids were handed out in between", () => {
  const ids = Array.from({ length: 200 }, () => newRequestId());
  expect(new Set(ids).size).toBe(ids.length); // unique, as now
  const tails = ids.map((id) => parseInt(id.slice(-12), 16));
  const steps = tails.slice(1).map((t, i) => t - tails[i]!);
  // today every step is exactly 1: the counter is in clear
  expect(steps.filter((s) => s === 1).length).toBeLessThan(10);
});
