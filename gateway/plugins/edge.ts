/**
 * The one synchronous hook every request passes first: request id (and the request's log scope, infra/log.ts),
 * transparency headers, `Cache-Control: no-store` on the API, the per-surface body limit, any JSON media type made the one Elysia parses (json-body.ts)
 * and the metrics start stamp. One hook instead of four keeps the health route near bare Bun.serve
 * (docs/performance.md); each concern still lives in its own module.
 */
import { Elysia } from "elysia";
import { refuseOversizedBody } from "./body-limit.ts";
import { normalizeJsonContentType } from "./json-body.ts";
import { markRequestStart } from "./metrics.ts";
import { assignRequestId } from "./request-id.ts";
import { applyTransparencyHeaders } from "./transparency.ts";
import { pathOf } from "../url-path.ts";
import { enterRequest } from "../../infra/log.ts";

const MCP_PATH = /^\/[^/]+\/mcp(?:\/|$)/;
/** A store's MCP endpoint: the second path segment is `mcp` (the cheap test first: most paths are /api/…). */
const isMcpPath = (path: string): boolean => path.includes("/mcp") && MCP_PATH.test(path);

export const edge = new Elysia({ name: "edge" }).onRequest(({ request, set }) => {
  markRequestStart(request);
  const headers = set.headers as Record<string, string | number>;
  // the request's scope: its log lines and the actor messages it sends carry the id (docs/decisions.md)
  enterRequest(assignRequestId(request, headers));
  applyTransparencyHeaders(request.method, headers);
  const path = pathOf(request.url);
  // Every API answer is the caller's own (a new key's secret, a login token, carts, orders, wallets) behind a custom
  // auth header a shared cache cannot see, so none may be stored; a route that may be cached sets its own header
  // after this default (the well-known documents outside /api do; audit A, session 16).
  // A store's MCP endpoints (/{slug}/mcp, …/discovery, …/customer, …/checkout) answer the caller's own session and
  // data the same way (review R, session 17: only /api had it; the GET event stream is the one a cache could keep).
  if (path.startsWith("/api/") || isMcpPath(path)) headers["cache-control"] = "no-store";
  if (request.method !== "GET" && request.method !== "HEAD") {
    normalizeJsonContentType(request);
    refuseOversizedBody(request, path);
  }
});
