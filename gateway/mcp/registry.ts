/**
 * The MCP tool registry: every tool declared once (name, title, LLM-facing description, TypeBox input and output
 * schemas, annotations, auth need, confirmation need, rate bucket, handler). The server builds ONE table from it
 * at start-up (compiled argument validators, the advertised `tools/list` entries) and shares it across every
 * store, session and request.
 */
import type { Static, TObject, TSchema } from "@sinclair/typebox";
import type { Feature, Scope, Tier } from "../../actors/agent/access.ts";
import type { ErrorCode } from "../../actors/runtime/errors.ts";
import type { StoreRecord } from "../../actors/store/schemas.ts";
import type { Services } from "../services.ts";

/** Which endpoint a request came in on. */
export type Endpoint = "main" | "discovery" | "customer" | "checkout";

/**
 * Groups decide which endpoint serves a tool:
 * - discovery: public catalog and merchant reads (every endpoint);
 * - cart, checkout: need a credential (main and checkout endpoints);
 * - account: orders, returns, wallet (main, customer and checkout endpoints);
 * - customer: end-customer identity tools (main and customer endpoints).
 */
export type ToolGroup = "discovery" | "cart" | "checkout" | "account" | "customer";

export const ENDPOINT_GROUPS: Readonly<Record<Endpoint, readonly ToolGroup[]>> = {
  main: ["discovery", "cart", "checkout", "account", "customer"],
  discovery: ["discovery"],
  customer: ["discovery", "account", "customer"],
  checkout: ["discovery", "cart", "checkout", "account"],
};

export interface Caller {
  kind: "agent-key" | "oauth";
  /** The agent key id, or `oauth:<clientId>:<sub>` for an OAuth caller (owner of its carts and orders). */
  keyId: string;
  clientId?: string;
  userId: string;
  scopes: readonly string[];
  tier: Tier;
  /** An agent key's account plan that caps its features (null or absent: no cap). */
  plan?: Tier | null;
}

/** A verified end customer (identity token on the customer endpoint). */
export interface Customer {
  id: string;
  /** Hash the orders table keeps as buyer_ref for this customer. */
  buyerRef: string;
}

export interface ConfirmRequest {
  /** One line: what will happen, with amounts and currency. */
  summary: string;
  /** Facts shown to the human (amount, currency, items…). */
  facts?: Record<string, string | number>;
}

/**
 * Thrown by a tool's `summarize` when the call's outcome is already certain and changes nothing (apply_coupon with a
 * code that will not apply): the dispatcher answers `answer` as the tool's result, and nobody is asked to approve a
 * call that cannot do anything.
 */
export class AnsweredWithoutAsking {
  constructor(readonly answer: Record<string, unknown>) {}
}

export interface ToolContext {
  svc: Services;
  store: StoreRecord;
  endpoint: Endpoint;
  /** The verified credential, or null for anonymous discovery calls. */
  caller: Caller | null;
  customer: Customer | null;
  /** Raw identity-token state on the customer endpoint (verification errors surface as tool errors). */
  customerError: { code: ErrorCode; message: string; details?: Record<string, unknown> } | null;
  now: Date;
  /**
   * Asks the human. Resolves on accept; throws HUMAN_CONFIRMATION_DECLINED on decline/cancel and
   * HUMAN_CONFIRMATION_REQUIRED when this path cannot ask.
   */
  confirm(req: ConfirmRequest): Promise<void>;
  /** Shows the buyer a link (URL-mode elicitation) when the client supports it; a no-op otherwise. */
  openUrl(url: string, message: string): Promise<boolean>;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint?: boolean;
}

export interface ToolDef<I extends TObject = TObject, O extends TSchema = TSchema> {
  name: string;
  title: string;
  /** Written for an LLM agent: when to use it, what comes back, what to call next. */
  description: string;
  group: ToolGroup;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** `public`: anyone; `key`: an agent API key or an OAuth bearer token. */
  auth: "public" | "key";
  /** The credential needs one of these scopes (the first is named in errors). */
  scopes?: readonly Scope[];
  /**
   * A scope some calls need besides `scopes`, decided by their arguments (unvalidated: read defensively), e.g.
   * ucp_create_checkout from line_items also makes a cart (`cart`). The dispatcher answers an OAuth token without it
   * with the insufficient_scope challenge, as for `scopes`; the handler refuses an API key without it (`forbidden`).
   */
  argumentScopes?: (args: unknown) => readonly Scope[] | undefined;
  /** The key's tier must include this feature (same table as REST). */
  feature?: Feature;
  /** SANDBOX keys are refused (transactional tools, as on REST). */
  sandboxRefused?: boolean;
  /** Write tools: a human must approve each call. */
  confirmation: boolean;
  /** Not confirmed as a whole, but may ask the human on some paths (so sessions route it through the SDK). */
  mayAsk?: boolean;
  /** Write tools: what the human is asked to approve (amounts with currency). Required when `confirmation`. */
  summarize?: (args: Static<I>, ctx: ToolContext) => Promise<ConfirmRequest>;
  /**
   * Per-tool rate bucket (actors/agent/limits.ts MCP_TOOL_LIMITS) when the tool has one: admission keys the per-tool
   * layer on it, not on the name, so an alias that keeps its base tool's bucket shares that budget.
   */
  rateBucket?: string;
  /** Served only on this store (demo) or when explicitly enabled; informational for docs. */
  note?: string;
  /** How error codes the tool can return are reached, for docs/mcp-tools.md. */
  errors?: Partial<Record<ErrorCode, string>>;
  /** A REST code thrown by a reused application function, translated to this tool's MCP code. */
  translate?: Partial<Record<ErrorCode, ErrorCode>>;
  /** Returns the success object (validated against `output` by clients; the tests check every tool). */
  handler(args: Static<I>, ctx: ToolContext): Promise<object>;
}

// biome-ignore lint: registry entries differ in their schema generics
export type AnyTool = ToolDef<any, any>;

export function defineTool<I extends TObject, O extends TSchema>(def: ToolDef<I, O>): ToolDef<I, O> {
  return def;
}
