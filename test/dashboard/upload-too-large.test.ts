/**
 * A dashboard form whose body passes the dashboard's 20 MiB body limit (plugins/body-limit.ts) is answered with the
 * dashboard's own 413 page naming the limit. A declared Content-Length is refused before any route runs (the error
 * plugin used to answer the API's JSON envelope, with the agent transparency headers). A chunked upload is cut at the limit while it is read; the dashboard
 * used to read the cut body as an empty form and answer the CSRF 403 (engineer W's report, "Left"), and nothing of
 * the truncated file may reach the catalog.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { dashboardSession as openSession } from "../helpers/dashboard.ts";
import { rawRequest as sendRaw, repeatingBody } from "../helpers/raw-http.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const LIMIT = 20 * 1024 * 1024;
let srv: TestServer;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const dashboardSession = () => openSession(srv, STORE);

/**
 * A multipart upload sent chunked (a ReadableStream body has no Content-Length): the CSRF field first, then a JSONL
 * file of valid product lines that runs on for `fileBytes`. `sent` counts what the service pulled.
 */
function chunkedUpload(csrf: string, fileBytes: number) {
  const boundary = "----v3-too-large";
  const enc = new TextEncoder();
  const head = enc.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\nContent-Type: application/x-ndjson\r\n\r\n`,
  );
  const tail = enc.encode(`\r\n--${boundary}--\r\n`);
  // ~64 KiB of product lines per chunk, every one of them importable if it were ever processed
  let n = 0;
  const chunkOfLines = () => {
    let s = "";
    while (s.length < 64 * 1024) s += JSON.stringify({ externalId: `V3-BIG-${n++}`, title: "Cut-off lamp", price: 1, currency: "USD" }) + "\n";
    return enc.encode(s);
  };
  const state = { sent: 0 };
  let stage = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 0) {
        stage = 1;
        state.sent += head.byteLength;
        return controller.enqueue(head);
      }
      if (state.sent < fileBytes) {
        const c = chunkOfLines();
        state.sent += c.byteLength;
        return controller.enqueue(c);
      }
      if (stage === 1) {
        stage = 2;
        state.sent += tail.byteLength;
        return controller.enqueue(tail);
      }
      controller.close();
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, state };
}

test("a chunked catalog upload past the 20 MiB limit gets the dashboard's 413 page naming the limit, not the CSRF 403, and imports nothing", async () => {
  const s = await dashboardSession();
  const up = chunkedUpload(s.csrf, 32 * 1024 * 1024);
  const r = await fetch(`${srv.url}/dashboard/s/${STORE}/catalog/upload`, {
    method: "POST",
    headers: { cookie: s.cookie, "content-type": up.contentType },
    body: up.body,
    signal: AbortSignal.timeout(30_000),
  });
  expect(r.status).toBe(413);
  expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(r.headers.get("connection")).toBe("close");
  const page = await r.text();
  expect(page).toContain("<h1>Upload too large</h1>");
  expect(page).toContain("20 MB");
  expect(page).toContain("HTTP 413");
  expect(page).not.toContain("Form expired");
  // the service stopped reading at the limit, and no line of the cut file reached the catalog
  expect(up.state.sent).toBeLessThan(32 * 1024 * 1024);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${STORE} AND external_id LIKE 'V3-BIG-%'`;
  expect(n).toBe(0);
  // the session and its CSRF token still work: a small upload afterwards is imported
  const fd = new FormData();
  fd.append("_csrf", s.csrf);
  fd.append("file", new File([JSON.stringify({ externalId: "V3-SMALL-1", title: "A small lamp", price: 1, currency: "USD" })], "small.jsonl"));
  const ok = await srv.fetch(`/dashboard/s/${STORE}/catalog/upload`, { method: "POST", headers: { cookie: s.cookie }, body: fd });
  expect(ok.status).toBe(200);
  expect(await ok.text()).toContain("1 accepted");
}, 60_000);

test("a chunked log-in form past the limit gets the 413 page, not the CSRF 403", async () => {
  const s = await dashboardSession();
  const enc = new TextEncoder();
  const filler = enc.encode("x".repeat(64 * 1024));
  const { body } = repeatingBody(filler, LIMIT + 4 * filler.byteLength, enc.encode(`_csrf=${encodeURIComponent(s.csrf)}&email=a%40b.c&password=`));
  const r = await fetch(`${srv.url}/dashboard/login`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: s.loginCookie, "content-type": "application/x-www-form-urlencoded" },
    body,
    signal: AbortSignal.timeout(30_000),
  });
  expect(r.status).toBe(413);
  expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
  const page = await r.text();
  expect(page).toContain("<h1>Upload too large</h1>");
  expect(page).toContain("20 MB");
}, 60_000);

const rawRequest = (head: string, body: string) => sendRaw(srv, head, body);

test("an upload declaring a length past the limit gets the 413 page unread, without the agent headers", async () => {
  const s = await dashboardSession();
  const { host } = new URL(srv.url);
  const answer = await rawRequest(
    [
      `POST /dashboard/s/${STORE}/catalog/upload HTTP/1.1`,
      `Host: ${host}`,
      `Cookie: ${s.cookie}`,
      "Content-Type: multipart/form-data; boundary=x",
      `Content-Length: ${LIMIT + 1}`,
    ].join("\r\n"),
    "--x",
  );
  expect(answer).toStartWith("HTTP/1.1 413");
  const [head, page] = [answer.slice(0, answer.indexOf("\r\n\r\n")).toLowerCase(), answer.slice(answer.indexOf("\r\n\r\n") + 4)];
  expect(head).toContain("content-type: text/html; charset=utf-8");
  expect(head).toContain("connection: close");
  expect(head).toContain("content-security-policy:");
  expect(head).not.toContain("x-agent-commerce");
  expect(page).toContain("<h1>Upload too large</h1>");
  expect(page).toContain("20 MB");
  expect(page).not.toContain("payload_too_large");
});
