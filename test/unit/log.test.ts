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
