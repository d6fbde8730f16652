import { describe, expect, test } from "bun:test";
import "@elysiajs/openapi";
import { FormatRegistry } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { t } from "elysia";
import { useCompiledFormats } from "../../gateway/plugins/schema-formats.ts";

// whatever the openapi plugin registered (a zod schema built per call), captured before it is replaced
const zodUuid = FormatRegistry.Get("uuid")!;

/** Value → what zod's `z.string().uuid()` says (checked against it when this table was written). */
const VALUES: [string, boolean][] = [
  [crypto.randomUUID(), true],
  [crypto.randomUUID().toUpperCase(), true],
  ["00000000-0000-0000-0000-000000000000", true],
  ["ffffffff-ffff-ffff-ffff-ffffffffffff", true],
  ["0190b6c8-7d3c-7c4e-9a1f-2b3c4d5e6f70", true], // version 7
  ["6ba7b810-9dad-11d1-80b4-00c04fd430c8", true], // version 1
  ["11111111-1111-1111-1111-111111111111", false], // variant nibble 1: not an RFC 9562 UUID
  ["11111111-1111-0111-8111-111111111111", false], // version 0
  ["11111111-1111-9111-8111-111111111111", false], // version 9
  ["11111111-1111-4111-c111-111111111111", false], // variant c: outside 8-b
  ["urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c8", false],
  ["6ba7b810-9dad-11d1-80b4-00c04fd430c8 ", false],
  ["6ba7b8109dad11d180b400c04fd430c8", false],
  ["", false],
  ["not-a-uuid", false],
];

describe("the uuid format after the openapi plugin is loaded", () => {
  test("the check registered before ours agrees with the table (the openapi plugin's zod check when loaded first)", () => {
    for (const [v, ok] of VALUES) expect({ v, ok: zodUuid(v) }).toEqual({ v, ok });
  });

  test("the compiled check accepts and refuses exactly what zod's uuid rule does", () => {
    useCompiledFormats();
    const compiled = FormatRegistry.Get("uuid")!;
    for (const [v, ok] of VALUES) expect({ v, ok: compiled(v) }).toEqual({ v, ok });
  });

  test("checking a uuid no longer builds anything per call (well under a microsecond each)", () => {
    useCompiledFormats();
    const check = FormatRegistry.Get("uuid")!;
    const id = crypto.randomUUID();
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) check(id);
    // ~15 ms here; the zod check took ~18 µs per call, so 100,000 calls took ~1.8 s
    expect(performance.now() - started).toBeLessThan(600);
  });

  test("a compiled TypeBox schema with format uuid uses the replacement", () => {
    useCompiledFormats();
    const check = TypeCompiler.Compile(t.Object({ id: t.String({ format: "uuid" }) }));
    expect(check.Check({ id: crypto.randomUUID() })).toBe(true);
    expect(check.Check({ id: "11111111-1111-1111-1111-111111111111" })).toBe(false);
  });
});
