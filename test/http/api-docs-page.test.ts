/**
 * /api/docs loads one pinned Scalar release with its integrity hash, under a CSP that allows only that script
 * (audit U LOW-3: it loaded @latest from a CDN with neither, on the dashboard's origin).
 */
import { describe, expect, test } from "bun:test";
import { SCALAR_INTEGRITY, SCALAR_SCRIPT } from "../../gateway/openapi/docs-page.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer();

const directives = (csp: string) => new Map(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));

describe("the API docs page", () => {
  test("its only script is an exact Scalar version with a sha384 integrity hash", async () => {
    const res = await srv.fetch("/api/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    const external = scripts.filter((s) => /\ssrc=/.test(s));
    expect(external).toHaveLength(1);
    expect(external[0]).toContain(`src="${SCALAR_SCRIPT}"`);
    expect(external[0]).toContain(`integrity="${SCALAR_INTEGRITY}"`);
    expect(external[0]).toContain('crossorigin="anonymous"');
    expect(SCALAR_SCRIPT).toMatch(/@scalar\/api-reference@\d+\.\d+\.\d+\//);
    expect(SCALAR_INTEGRITY).toMatch(/^sha384-[A-Za-z0-9+/]{64}$/);
    expect(html).not.toContain("@latest");
    // every other <script> is a data block, which the browser never runs
    for (const s of scripts.filter((s) => !/\ssrc=/.test(s))) expect(s).toContain('type="application/json"');
    expect(html).toContain('data-url="/api/v1/openapi.json"');
  });

  test("a CSP allows that one script and no inline script, other connection, frame or form target", async () => {
    const res = await srv.fetch("/api/docs");
    const csp = res.headers.get("content-security-policy");
    expect(csp).not.toBeNull();
    const d = directives(csp!);
    expect(d.get("default-src")).toEqual(["'none'"]);
    expect(d.get("script-src")).toEqual([SCALAR_SCRIPT]);
    expect(d.get("connect-src")).toEqual(["'self'"]);
    expect(d.get("frame-ancestors")).toEqual(["'none'"]);
    expect(d.get("form-action")).toEqual(["'none'"]);
    expect(d.get("base-uri")).toEqual(["'none'"]);
    expect(d.get("object-src")).toEqual(["'none'"]);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });

  test("the OpenAPI document the page renders is still served", async () => {
    const r = await srv.json("/api/v1/openapi.json");
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe("3.1.0");
  });
});
