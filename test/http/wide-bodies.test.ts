/**
 * Wide JSON bodies (review H, finding 1): Elysia's ValidationError serialises the whole body, so a wide body that
 * fails a schema blocked the event loop (2.7 M zeros on the unauthenticated catalog PUT: ~1.5 s) and answered with
 * megabytes of the caller's own value. The body bounds (plugins/json-depth.ts) refuse it before validation, and
 * the 400 (plugins/errors.ts) quotes at most a short preview of any value.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { MAX_JSON_ARRAY_ITEMS } from "../../gateway/plugins/json-depth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const JSON_HEADERS = { "content-type": "application/json" };

test("an unauthenticated 5 MiB wide catalog PUT is refused at the array bound without stalling the event loop", async () => {
  const body = `{"products":[${Array(2_700_000).fill("0").join(",")}]}`; // 5.1 MiB, under the 8 MiB merchant limit
  const put = srv.fetch("/api/v1/merchant/stores/demo-store/catalog", { method: "PUT", headers: JSON_HEADERS, body });
  // server and client share this event loop: a probe iteration that takes far longer than its 20 ms sleep is time
  // the loop could not run anything (1,460 ms before the bound)
  let done = false;
  let longestGap = 0;
  const probe = (async () => {
    while (!done) {
      const t = performance.now();
      await (await srv.fetch("/api/v1/trust/methodology")).text();
      await Bun.sleep(20);
      longestGap = Math.max(longestGap, performance.now() - t - 20);
    }
  })();
  const r = await put;
  const text = await r.text();
  done = true;
  await probe;
  expect(r.status).toBe(400);
  const e = JSON.parse(text);
  expect(e.error).toContain(`more than ${MAX_JSON_ARRAY_ITEMS} items`);
  expect(e.details).toMatchObject({ location: "body", maxArrayItems: MAX_JSON_ARRAY_ITEMS });
  expect(text.length).toBeLessThan(1_000);
  // JSON.parse of 5 MiB and the bound's walk still run on the loop: ~100 ms alone, up to ~720 ms while the other test
  // worker loads both cores (session 17's full runs); the validation error's serialisation took 1.5 s alone, and so
  // did a walk of the 2.7 M items by a route's strictBody before the bound (session 17, 8844b65)
  expect(longestGap).toBeLessThan(1_000);
}, 60_000);

test("many arrays each under the length bound are refused at the value budget of a 1 MiB route", async () => {
  // 20 × 9,000 = 180,000 values > 131,072 (1 MiB / 8 bytes), 0.35 MiB
  const inner = `[${Array(9_000).fill("0").join(",")}]`;
  const body = `{"email":[${Array(20).fill(inner).join(",")}],"password":"x"}`;
  const r = await srv.fetch("/api/v1/auth/login", { method: "POST", headers: JSON_HEADERS, body });
  const text = await r.text();
  expect(r.status).toBe(400);
  const e = JSON.parse(text);
  expect(e.details).toMatchObject({ location: "body", maxValues: 131_072 });
  expect(text.length).toBeLessThan(1_000);
});

test("the merchant routes get their larger budget: 153,000 values pass the bounds there (and meet the 401)", async () => {
  const inner = `[${Array(9_000).fill("0").join(",")}]`;
  const body = `{"products":[${Array(17).fill(inner).join(",")}]}`;
  const r = await srv.fetch("/api/v1/merchant/stores/demo-store/catalog", { method: "PUT", headers: JSON_HEADERS, body });
  await r.text();
  expect(r.status).toBe(401);
});

test("a schema failure answers the first error's field with a bounded preview, never the caller's whole value", async () => {
  const cases: { body: string; found: string }[] = [
    // 0.95 MiB: answered with 2,000,268 characters before (the array twice, in the message and errors[0])
    { body: `{"email":[${Array(9_000).fill("0").join(",")}],"password":"x"}`, found: "an array of 9000 items" },
    { body: `{"email":${JSON.stringify(["a".repeat(900_000)])},"password":"x"}`, found: "an array of 1 item" },
    { body: `{"email":5,"password":"x"}`, found: "(got 5)" },
  ];
  for (const c of cases) {
    const t = performance.now();
    const r = await srv.fetch("/api/v1/auth/login", { method: "POST", headers: JSON_HEADERS, body: c.body });
    const text = await r.text();
    const ms = performance.now() - t;
    expect(r.status).toBe(400);
    expect(text.length).toBeLessThan(1_000);
    const e = JSON.parse(text);
    expect(e.code).toBe("validation_error");
    expect(e.details.field).toBe("email");
    expect(e.error).toContain("Invalid body field 'email'");
    expect(e.error).toContain(c.found);
    expect(e.details.errors).toHaveLength(1);
    expect(e.details.errors[0].field).toBe("email");
    expect(ms).toBeLessThan(1_000);
  }
});
