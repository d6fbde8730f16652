/**
 * An MCP message over the body limit (gateway/plugins/body-limit.ts, 1 MiB) is refused before the MCP layer reads it:
 * a declared Content-Length in the request hook, a chunked body while McpGateway reads it. Both reach the error plugin
 * (gateway/plugins/errors.ts) as 413 `payload_too_large`; on an MCP endpoint its answer is this JSON-RPC error instead
 * of the REST envelope (review F2-3: an MCP client reads a JSON-RPC object, and `success`/`error` as a string is not
 * one). Same status, headers (request id, `Connection: close`) and counting as the REST answer; the code is -32600
 * Invalid Request, the code McpGateway gives every message-wide bound (too wide, too deep, a batch), with `data.code`
 * naming the envelope's code and `data.limitBytes` the limit. The id is null: the message was never read.
 *
 * Kept apart from server.ts so the error plugin does not load the MCP gateway.
 */
import { STORE_SLUG_PART } from "../../actors/store/slug.ts";

/**
 * Every MCP endpoint path (gateway/mcp/server.ts mcpRoutes): a store's main endpoint `/{slug}/mcp`, its dedicated
 * ones `/{slug}/mcp/{discovery|customer|checkout}` and the older `/mcp/{slug}`, with or without a trailing slash.
 * Matched on the path alone: a declared length is refused before routing.
 */
const MCP_ENDPOINT_PATH = new RegExp(`^/(?:${STORE_SLUG_PART}/mcp(?:/(?:discovery|customer|checkout))?|mcp/${STORE_SLUG_PART})/?$`);

export function isMcpEndpointPath(pathname: string): boolean {
  return MCP_ENDPOINT_PATH.test(pathname);
}

/** The JSON-RPC code of an oversized message: Invalid Request, like McpGateway's other message-wide bounds. */
export const OVERSIZE_RPC_CODE = -32600;

export interface McpOversizeAnswer {
  jsonrpc: "2.0";
  id: null;
  error: { code: number; message: string; data: Record<string, unknown> };
}

/** The JSON-RPC error for the error envelope's 413 (`message` its text, `details` its details: `limitBytes`). */
export function mcpOversizeAnswer(message: string, details: Record<string, unknown> | undefined): McpOversizeAnswer {
  return { jsonrpc: "2.0", id: null, error: { code: OVERSIZE_RPC_CODE, message: `Invalid Request: ${message}`, data: { code: "payload_too_large", ...(details ?? {}) } } };
}
