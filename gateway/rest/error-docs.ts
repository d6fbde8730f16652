/**
 * GET /docs/errors: a real page listing every error code with its HTTP status, MCP remedy, retryability and
 * scope, each with an anchor (`/docs/errors#CART_NOT_FOUND`) that MCP tool errors link to as `reference`.
 * Rendered once from the code table, so the page cannot drift from what the service returns.
 */
import { Elysia } from "elysia";
import { ERROR_TABLE, type Remedy } from "../../actors/runtime/errors.ts";
import { ACP_ONLY_ERROR_CODES } from "../bridge/acp.ts";

/**
 * The remedy of the protocol-only rows: what the ACP refusal asks for (a supported API-Version header), which is the
 * remedy of validation_error. Typed as a Remedy so the page stays inside the spec's closed set (audit S-5: it said
 * "fix input", a value the set does not have).
 */
const PROTOCOL_ROW_REMEDY: Remedy = "fix_arguments";

const remedyText = (r: Remedy) => r.replace(/_/g, " ");

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function renderErrorDocs(): string {
  const rows = Object.entries(ERROR_TABLE)
    .map(
      ([code, s]) =>
        `<tr id="${esc(code)}"><td><a href="#${esc(code)}"><code>${esc(code)}</code></a></td><td>${s.http}</td><td>${esc(remedyText(s.remedy))}</td><td>${s.retryable ? "yes" : "no"}</td><td>${s.scope === "merchant" ? "merchant, cacheable" : "call"}</td><td>${esc(s.description)}</td></tr>`,
    )
    .join("\n");
  // codes a protocol bridge answers in its own shape only (no MCP remedy: no MCP tool answers them)
  const protocolRows = ACP_ONLY_ERROR_CODES.map(
    (c) => `<tr id="${esc(c.code)}"><td><a href="#${esc(c.code)}"><code>${esc(c.code)}</code></a></td><td>${c.http}</td><td>${esc(remedyText(PROTOCOL_ROW_REMEDY))}</td><td>no</td><td>call</td><td>${esc(c.description)}</td></tr>`,
  ).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Error codes — Agent Commerce Service</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}tr:target{background:#fff6c8}code{font-size:.95em}</style>
</head><body>
<h1>Error codes</h1>
<p>REST errors use the envelope <code>{"success": false, "error": "…", "code": "…", "details": {…}}</code> with the HTTP
status below. MCP tool errors are results with <code>isError: true</code> and <code>structuredContent.error</code>
<code>{code, remedy, retryable, scope, details, reference}</code>, where <code>reference</code> links to the row here.
Statuses 429, 500 and 503 are retryable (backoff 1 s, 2 s, 4 s, 8 s; at most 4 retries; on 429 wait until
<code>X-RateLimit-Reset</code>). Never retry a code whose funds may be captured.</p>
<table><thead><tr><th>code</th><th>HTTP</th><th>remedy</th><th>retryable</th><th>scope</th><th>meaning</th></tr></thead>
<tbody>
${rows}
${protocolRows}
</tbody></table></body></html>`;
}

export function errorDocsRoutes() {
  const html = renderErrorDocs();
  return new Elysia({ name: "error-docs" }).get(
    "/docs/errors",
    ({ set }) => {
      set.headers["content-type"] = "text/html; charset=utf-8";
      return html;
    },
    { detail: { tags: ["operations"], summary: "Every error code, with status, remedy, retryability and scope" } },
  );
}
