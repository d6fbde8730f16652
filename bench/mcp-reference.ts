/**
 * The reference MCP servers of `bench/mcp.ts`, written the way the SDK's stateless example
 * (examples/server/simpleStatelessStreamableHttp.ts) does it: per request, `getServer()` builds a new McpServer and
 * registers its tools with zod input schemas written inline (so the schemas are built per request too), then a new
 * stateless transport, connect, handle, close.
 *
 * Two of them, both reported:
 *  - `oneToolServer`: only `search_products` (the figure of earlier rounds);
 *  - `fullToolServer`: the same 50 tools our endpoint advertises, each with its own input schema, built per request
 *    as the example builds its tools. This is the like-for-like reference: a server written that way registers its
 *    whole tool list on every request, and ours advertises 50 (docs/performance.md "MCP", docs/decisions.md).
 *    The zod schemas come from our TypeBox ones through `zodShapeOf`, which calls the same zod builders a developer
 *    would write inline (z.string().min(1).max(500)…), one call per keyword — no JSON Schema interpretation
 *    beyond that walk. Tools other than search_products answer a stub (only their registration is measured).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import * as z from "zod/v4";
import type { TSchema } from "@sinclair/typebox";

export type SearchTool = (args: { query: string; limit?: number }) => Promise<Record<string, unknown>>;

/** What a developer would write inline for one JSON Schema node, as zod builder calls. */
function zodOf(s: Record<string, unknown>): z.ZodType {
  let out: z.ZodType;
  if (Array.isArray(s.anyOf)) {
    const options = s.anyOf as Record<string, unknown>[];
    out = options.every((o) => "const" in o)
      ? z.enum(options.map((o) => String(o.const)) as [string, ...string[]])
      : z.union(options.map(zodOf) as [z.ZodType, z.ZodType, ...z.ZodType[]]);
  } else if ("const" in s) {
    out = z.literal(s.const as string);
  } else {
    switch (s.type) {
      case "string": {
        let str = s.format === "uuid" ? z.uuid() : s.format === "email" ? z.email() : s.format === "date-time" ? z.iso.datetime() : s.format === "uri" ? z.url() : z.string();
        if (typeof s.minLength === "number") str = str.min(s.minLength);
        if (typeof s.maxLength === "number") str = str.max(s.maxLength);
        if (typeof s.pattern === "string") str = str.regex(new RegExp(s.pattern));
        out = str;
        break;
      }
      case "integer":
      case "number": {
        let n = s.type === "integer" ? z.number().int() : z.number();
        if (typeof s.minimum === "number") n = n.min(s.minimum);
        if (typeof s.maximum === "number") n = n.max(s.maximum);
        if (typeof s.exclusiveMinimum === "number") n = n.gt(s.exclusiveMinimum);
        out = n;
        break;
      }
      case "boolean":
        out = z.boolean();
        break;
      case "array": {
        let a = z.array(zodOf((s.items ?? {}) as Record<string, unknown>));
        if (typeof s.minItems === "number") a = a.min(s.minItems);
        if (typeof s.maxItems === "number") a = a.max(s.maxItems);
        out = a;
        break;
      }
      case "object":
        out = s.additionalProperties === false ? z.strictObject(shapeOf(s)) : z.object(shapeOf(s));
        break;
      default:
        out = z.any();
    }
  }
  return typeof s.description === "string" ? out.describe(s.description) : out;
}

function shapeOf(s: Record<string, unknown>): Record<string, z.ZodType> {
  const required = new Set((s.required as string[] | undefined) ?? []);
  const shape: Record<string, z.ZodType> = {};
  for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Record<string, unknown>>)) {
    shape[k] = required.has(k) ? zodOf(v) : zodOf(v).optional();
  }
  return shape;
}

/** The zod raw shape (McpServer.registerTool's `inputSchema`) of a TypeBox object schema, built now. */
export function zodShapeOf(schema: TSchema): Record<string, z.ZodType> {
  return shapeOf(schema as unknown as Record<string, unknown>);
}

const searchText = (res: Record<string, unknown>) => ({ content: [{ type: "text" as const, text: JSON.stringify(res) }], structuredContent: res });

export function oneToolServer(search: SearchTool): McpServer {
  const server = new McpServer({ name: "reference", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.registerTool(
    "search_products",
    {
      description: "Search the store's catalog",
      inputSchema: {
        query: z.string().min(1).max(500).describe("What the shopper is looking for"),
        limit: z.number().int().min(1).max(100).optional().describe("Results per page"),
        max_price: z.number().nonnegative().optional().describe("Highest price"),
        in_stock_only: z.boolean().optional().describe("Only products in stock"),
        category: z.string().optional().describe("Category filter"),
      },
    },
    async ({ query, limit }) => searchText(await search({ query, limit })),
  );
  return server;
}

export interface ToolDeclaration {
  name: string;
  title?: string;
  description: string;
  input: TSchema;
}

export function fullToolServer(tools: readonly ToolDeclaration[], search: SearchTool): McpServer {
  const server = new McpServer({ name: "reference", version: "1.0.0" }, { capabilities: { logging: {} } });
  for (const t of tools) {
    const config = { title: t.title, description: t.description, inputSchema: zodShapeOf(t.input) };
    if (t.name === "search_products") {
      server.registerTool(t.name, config, async (args: Record<string, unknown>) => searchText(await search({ query: String(args.query), limit: args.limit as number | undefined })));
    } else {
      server.registerTool(t.name, config, async () => ({ content: [{ type: "text" as const, text: "not implemented in the reference" }], isError: true }));
    }
  }
  return server;
}
