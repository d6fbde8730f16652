/**
 * MCP tool errors: HTTP 200, `isError: true`, a text content and `structuredContent.error`
 * {code, remedy, retryable, scope, details, reference}. Remedy, retryability and scope come from the ONE code table
 * (actors/runtime/errors.ts); nothing here restates them.
 *
 * Remedy spelling: snake_case of the spec's words (stop, human_decides, fix_arguments, refresh_state,
 * different_path, retry_same_call, retry_with_backoff). Scope: `call`, or `merchant` (merchant-wide, cacheable).
 *
 * The official client validates `structuredContent` against the tool's advertised `outputSchema` even when
 * `isError` is true, so every output schema is `success shape | ToolErrorResult` (see `outputSchemaOf`).
 */
import { Type as T, type TSchema } from "@sinclair/typebox";
import { ActorError, ERROR_TABLE, isErrorCode, type ErrorCode } from "../../actors/runtime/errors.ts";

export const REMEDIES = ["stop", "human_decides", "fix_arguments", "refresh_state", "different_path", "retry_same_call", "retry_with_backoff"] as const;

export const ToolErrorBody = T.Object(
  {
    code: T.String({ description: "Stable discriminator (see reference)." }),
    message: T.String(),
    remedy: T.Union(REMEDIES.map((r) => T.Literal(r)), { description: "What the agent should do next." }),
    retryable: T.Boolean(),
    scope: T.Union([T.Literal("call"), T.Literal("merchant")], { description: "merchant = merchant-wide and cacheable." }),
    details: T.Record(T.String(), T.Unknown()),
    reference: T.String({ format: "uri", description: "{site_url}/docs/errors#CODE" }),
  },
  { additionalProperties: false },
);

export const ToolErrorResult = T.Object({ error: ToolErrorBody }, { additionalProperties: false, title: "ToolError" });

export interface ToolErrorData {
  code: string;
  message: string;
  remedy: (typeof REMEDIES)[number];
  retryable: boolean;
  scope: "call" | "merchant";
  details: Record<string, unknown>;
  reference: string;
}

export interface ToolCallResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

/**
 * The advertised output schema: the tool's success object or the error object. MCP wants `type: "object"` at the
 * root, so the union is wrapped in one.
 */
export function outputSchemaOf(success: TSchema): Record<string, unknown> {
  return { type: "object", anyOf: [success, ToolErrorResult] };
}

export function toolErrorData(siteUrl: string, code: ErrorCode, message: string, details?: Record<string, unknown>): ToolErrorData {
  const spec = ERROR_TABLE[code];
  return {
    code,
    message,
    remedy: spec.remedy,
    retryable: spec.retryable,
    scope: spec.scope,
    details: details ?? {},
    reference: `${siteUrl}/docs/errors#${code}`,
  };
}

export function errorResult(siteUrl: string, code: ErrorCode, message: string, details?: Record<string, unknown>): ToolCallResult {
  const error = toolErrorData(siteUrl, code, message, details);
  return {
    content: [{ type: "text", text: `${code}: ${message} (remedy: ${error.remedy.replace(/_/g, " ")}; ${error.reference})` }],
    structuredContent: { error },
    isError: true,
  };
}

/** Any thrown value as a tool error result; unknown faults become INTERNAL_ERROR without internals. */
export function resultFromThrown(siteUrl: string, err: unknown): ToolCallResult {
  if (err instanceof ActorError) return errorResult(siteUrl, err.code, err.message, err.details);
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && isErrorCode(code)) {
    return errorResult(siteUrl, code, String((err as Error).message ?? ERROR_TABLE[code].description), (err as { details?: Record<string, unknown> }).details);
  }
  return errorResult(siteUrl, "INTERNAL_ERROR", "Unexpected fault.");
}

/** Results whose one text block is exactly `JSON.stringify(structuredContent)` (see toolsCallResponse). */
const textIsStructuredJson = new WeakSet<ToolCallResult>();

export function successResult(data: Record<string, unknown>): ToolCallResult {
  const result: ToolCallResult = { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
  textIsStructuredJson.add(result);
  return result;
}

/** The serialised `structuredContent` of a success result, when it is already at hand as its text block. */
export function serialisedStructuredContent(result: ToolCallResult): string | undefined {
  return textIsStructuredJson.has(result) && result.content.length === 1 && !result.isError ? result.content[0]!.text : undefined;
}
