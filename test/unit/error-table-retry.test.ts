import { expect, test } from "bun:test";
import { ERROR_TABLE } from "../../actors/runtime/errors.ts";

// The spec: "Statuses 429, 500 and 503 are retryable" and REST clients branch on the status. A code that must not
// be retried (a funds-captured stop) must therefore never travel on one of those statuses.
test("no code that must not be retried is sent with a status the spec calls retryable (429, 500, 503)", () => {
  const wrong = Object.entries(ERROR_TABLE)
    .filter(([, v]) => !v.retryable && [429, 500, 503].includes(v.http))
    .map(([k, v]) => `${k} ${v.http}`);
  expect(wrong).toEqual([]);
});
