/**
 * The configuration's descriptions (README table, generated from CONFIG_VARS) name only answers the service gives
 * (audit AX F4, F5): an "NNN CODE" in a description is a real error code with that status, so an operator reading
 * the table finds it in /docs/errors. The x402 capture-depth row said "503 SETTLEMENT_UNKNOWN", which is a
 * details.status, not a code; the lease row left out the ACP/UCP session claim its value also times.
 */
import { expect, test } from "bun:test";
import { ERROR_TABLE, isErrorCode } from "../../actors/runtime/errors.ts";
import { CONFIG_VARS } from "../../infra/config.ts";

test("every status-and-code a configuration description names is an error code the service answers with that status", () => {
  const wrong: string[] = [];
  for (const [name, v] of Object.entries(CONFIG_VARS)) {
    for (const [, status, code] of v.doc.matchAll(/\b([1-5]\d\d) `?([A-Za-z][A-Za-z_]+)/g)) {
      if (!isErrorCode(code!) || ERROR_TABLE[code!].http !== Number(status)) wrong.push(`${name}: ${status} ${code}`);
    }
  }
  expect(wrong).toEqual([]);
});

test("X402_CAPTURE_CONFIRMATIONS says the waiting checkout's answer is 503 UPSTREAM_UNAVAILABLE with details.status SETTLEMENT_UNKNOWN", () => {
  expect(CONFIG_VARS.X402_CAPTURE_CONFIRMATIONS.doc).toContain("503 UPSTREAM_UNAVAILABLE with details.status SETTLEMENT_UNKNOWN (call again with the same idempotency_key)");
});

test("BRIDGE_IDEMPOTENCY_LEASE_MS names the ACP/UCP session's write claim (409, reason session_busy) beside the Idempotency-Key claim", () => {
  expect(CONFIG_VARS.BRIDGE_IDEMPOTENCY_LEASE_MS.doc).toBe(
    "How long an unfinished ACP/UCP/AP2 Idempotency-Key claim, and an ACP/UCP session's write claim (meanwhile 409, reason session_busy), holds before another request may take it over. " +
      "At most 2147483647 (about 24.8 days, the longest timer delay).",
  );
});
