/**
 * Elysia decides from the source of every hook and handler which parts of the request each route must prepare
 * (its "sucrose" inference): a context parameter that is not destructured, or is handed to another function, counts
 * as "everything", and then every route of the app materialises headers, cookies and query for every request. On the
 * wire that cost +5 µs per request (session 5, found by bench/admission.ts after a global onError took `ctx` whole).
 * This test keeps every hook and handler in gateway/ destructuring its context.
 */
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";

const HOOK = /\.(onRequest|onParse|onTransform|onBeforeHandle|onAfterHandle|onAfterResponse|mapResponse|onError|derive|resolve)\(\s*(\{[^{}]*\}\s*,\s*)?(async\s+)?(\(\s*[A-Za-z_$][\w$]*\s*(:[^)]*)?\)|[A-Za-z_$][\w$]*)\s*=>/g;

describe("Elysia hooks in gateway/", () => {
  test("every hook destructures its context instead of taking it whole, so routes do not prepare what nobody reads", async () => {
    const offenders: string[] = [];
    for await (const file of new Glob("gateway/**/*.ts").scan({ cwd: `${import.meta.dir}/../..` })) {
      const text = await Bun.file(`${import.meta.dir}/../../${file}`).text();
      for (const m of text.matchAll(HOOK)) offenders.push(`${file}: ${m[0]}`);
    }
    expect(offenders).toEqual([]);
  });

  test("the check finds a hook that takes its context whole", () => {
    const sample = `new Elysia().onError({ as: "global" }, (ctx) => handle(ctx)).derive(async (c) => ({}))`;
    expect([...sample.matchAll(HOOK)].length).toBe(2);
    expect([..."app.onError(({ code, error }) => code)".matchAll(HOOK)].length).toBe(0);
  });
});
