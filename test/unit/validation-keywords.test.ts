import { describe, expect, test } from "bun:test";
import { t } from "elysia";
import { Value } from "@sinclair/typebox/value";
import { fieldOfPath, validationAnswer } from "../../infra/validation-message.ts";

/** The 400 text and details of the first failure of `value` against `schema`, as the error plugin builds them. */
function answer(schema: Parameters<typeof Value.Errors>[0], value: unknown) {
  const e = Value.Errors(schema, value).First();
  return validationAnswer("body", fieldOfPath(e?.path), e);
}

describe("pattern, format, required and type failures in the house form (audit A2-F11)", () => {
  test("a date-time format is said in words with details.format", () => {
    const a = answer(t.Object({ at: t.String({ format: "date-time" }) }), { at: "yesterday" });
    expect(a.message).toBe(`Invalid body field 'at': must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z (got "yesterday")`);
    expect(a.details).toMatchObject({ field: "at", type: "string", format: "date-time" });
  });

  test("a secret field's pattern failure says the rule, never the value", () => {
    const a = answer(t.Object({ token: t.String({ pattern: "^[0-9a-f]{64}$" }) }), { token: "hunter2-secret" });
    expect(a.message).toBe("Invalid body field 'token': must be a string matching the pattern '^[0-9a-f]{64}$' (got a string of 14 characters, not shown)");
    expect(JSON.stringify(a)).not.toContain("hunter2");
  });

  test("a missing property without a describable rule is still said as required", () => {
    const a = answer(t.Object({ thing: t.Any() }), {});
    expect(a.message).toBe("Invalid body field 'thing': is required (missing)");
    expect(a.details).toMatchObject({ field: "thing", required: true });
  });

  test("too few items names the bound", () => {
    const a = answer(t.Object({ ids: t.Array(t.String(), { minItems: 2 }) }), { ids: ["a"] });
    expect(a.message).toBe("Invalid body field 'ids': must be an array of at least 2 items (got an array of 1 item)");
    expect(a.details).toMatchObject({ type: "array", minItems: 2 });
  });
});
