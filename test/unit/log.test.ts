import { afterEach, expect, test } from "bun:test";
import { log, redact, setLogSink } from "../../infra/log.ts";

let restore: (() => void) | undefined;
afterEach(() => restore?.());

test("secret-looking values are redacted inside free text and secret-named fields are dropped", () => {
  const lines: string[] = [];
  restore = setLogSink((l) => lines.push(l));
  const jwt = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJlLWJ5dGVz";
  const pk = "0x" + "ab".repeat(32);
  log.error("failed for agnt_ABCDEFGHIJKLmnopqrstuv with Bearer abc.def-ghi and " + jwt, {
    detail: `refresh rt_secretvalue123 client mcps_clientsecret456 key ${pk} hook whsec_xyz789`,
    password: "hunter2",
    apiKey: "agnt_whatever",
    nested: { authorization: "Bearer zzz", note: "ok" },
  });
  const out = lines.join("\n");
  for (const secret of ["ABCDEFGHIJKLmnopqrstuv", "abc.def-ghi", jwt, "secretvalue123", "clientsecret456", "ab".repeat(32), "xyz789", "hunter2", "zzz"]) {
    expect(out).not.toContain(secret);
  }
  expect(out).toContain('"note":"ok"');
  expect(redact("nothing secret here")).toBe("nothing secret here");
});

test("an agent key in a log line keeps its 12-character lookup prefix, as docs/access.md promises, and loses the rest", () => {
  const key = "agnt_PRUUDTR5SiAi02qtERUxdIMAglgAqAxMT9XQjXVGMXi";
  expect(redact(`key ${key} used`)).toBe("key agnt_PRUUDTR5SiAi…[redacted] used");
  // redacting twice changes nothing more; a fragment too short to hold more than a prefix is dropped whole
  expect(redact(redact(`key ${key} used`))).toBe("key agnt_PRUUDTR5SiAi…[redacted] used");
  expect(redact("agnt_ABCDEFGHIJKL and agnt_abc")).toBe("agnt_[redacted] and agnt_[redacted]");
  // a field named like a key is still dropped whole
  expect(redact({ "x-agent-api-key": key })).toEqual({ "x-agent-api-key": "[redacted]" });
});
