/**
 * MCP test helpers: the SDK's own Client + StreamableHTTPClientTransport against the started server, with the
 * official client's outputSchema validation on (callTool validates structuredContent, errors included).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type CallToolResult, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

export const DEMO = "demo-store";
/** DS-0024, 97.00, tracked stock, no variants (a product with variants is bought as one of them: audit A2-F13). */
export const DEMO_PRODUCT = "f8ec3e58-f9ca-55ec-8c27-4eb42af7009e";

export interface ConnectOptions {
  path?: string;
  headers?: Record<string, string>;
  /** Declare elicitation and answer every elicitation/create with this. */
  elicit?: (req: { message: string; mode?: string; url?: string }) => ElicitResult | Promise<ElicitResult>;
  /** Declare URL-mode elicitation too. */
  urlElicitation?: boolean;
}

export interface Connected {
  client: Client;
  elicitations: { message: string; mode?: string; url?: string }[];
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

export async function connect(srv: TestServer, opts: ConnectOptions = {}): Promise<Connected> {
  const capabilities = opts.elicit ? { elicitation: opts.urlElicitation ? { form: {}, url: {} } : { form: {} } } : {};
  const client = new Client({ name: "acs-test", version: "1.0.0" }, { capabilities });
  const elicitations: Connected["elicitations"] = [];
  if (opts.elicit) {
    const answer = opts.elicit;
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const p = req.params as { message: string; mode?: string; url?: string };
      elicitations.push({ message: p.message, mode: p.mode, url: p.url });
      return answer(p);
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}${opts.path ?? `/${DEMO}/mcp`}`), {
    requestInit: { headers: opts.headers ?? {} },
  });
  await client.connect(transport);
  await client.listTools(); // caches output validators so callTool validates structuredContent
  return {
    client,
    elicitations,
    call: (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>,
    close: () => client.close(),
  };
}

export function structured<T = any>(r: CallToolResult): T {
  return r.structuredContent as T;
}

export function errorOf(r: CallToolResult): { code: string; remedy: string; retryable: boolean; scope: string; details: Record<string, any>; reference: string; message: string } {
  if (!r.isError) throw new Error(`expected an error result, got ${JSON.stringify(r.structuredContent).slice(0, 300)}`);
  return (r.structuredContent as any).error;
}

/** Runs `call` and returns its result with the number of elicitations (questions to the human) it caused. */
export async function counted<T>(c: Connected, call: () => Promise<T>): Promise<{ result: T; asked: number }> {
  const before = c.elicitations.length;
  const result = await call();
  return { result, asked: c.elicitations.length - before };
}

export const accept = (): ElicitResult => ({ action: "accept", content: { approve: true } });
export const decline = (): ElicitResult => ({ action: "decline" });

/**
 * The purchase tests' setting: the seeded service without rate limits, an ENTERPRISE key of every scope, and an
 * agent connected with it to the demo store whose human accepts every question. Stop it with `agent.close()` then
 * `srv.stop()`.
 */
export async function startBuyingAgent(): Promise<{ srv: TestServer; key: TestKey; agent: Connected }> {
  const srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  try {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
    const agent = await connect(srv, { headers: key.headers, elicit: accept });
    return { srv, key, agent };
  } catch (err) {
    await srv.stop();
    throw err;
  }
}

/** Raw JSON-RPC POST (sessionless fast path). */
export async function rpc(srv: TestServer, path: string, method: string, params: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${srv.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* SSE or empty */
  }
  return { status: res.status, headers: res.headers, body };
}
