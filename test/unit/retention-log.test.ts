/**
 * The retention job's log line of a run that deleted rows names every rule's count, after the logger's redaction of
 * secret-looking field names (audit DZ-3: `oauth_refresh_tokens` always read "[redacted]").
 */
import { expect, test } from "bun:test";
import { retentionLogFields } from "../../infra/retention.ts";
import { redact } from "../../infra/log.ts";

test("a run's counts survive the log's redaction, the refresh-token rule's included, and rules that deleted nothing are left out", () => {
  const fields = retentionLogFields({ oauth_codes: 0, oauth_refresh_tokens: 3, carts: 2 });
  expect(redact(fields)).toEqual({ deleted: [{ rule: "oauth_refresh_tokens", rows: 3 }, { rule: "carts", rows: 2 }] });
});
