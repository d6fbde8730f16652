/**
 * The shared, pre-built tool table and `tools/call` dispatch. Built once per process; every store, endpoint,
 * session and sessionless request uses the same compiled validators and the same `tools/list` entries.
 *
 * One call: find the tool in the endpoint's set (TOOL_NOT_FOUND), validate arguments
 * (MISSING_REQUIRED_ARGUMENT / INVALID_ARGUMENT with details.field), check scopes/tier/SANDBOX, ask the human for
 * write tools, run the handler, and shape a result (success or structured error). Never throws.
 */
import type { TObject } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { keyHasFeature, lowestTierWith, planLacksFeature, tierHasFeature } from "../../actors/agent/access.ts";
import { featureTierNextStep, SANDBOX_NEXT_STEP } from "../../actors/agent/refusal-text.ts";
import { ActorError, fail, isErrorCode, type ErrorCode } from "../../actors/runtime/errors.ts";
import { log } from "../../infra/log.ts";
import { errorResult, outputSchemaOf, resultFromThrown, successResult, type ToolCallResult } from "./errors.ts";
import { AnsweredWithoutAsking, ENDPOINT_GROUPS, type AnyTool, type Endpoint, type ToolContext } from "./registry.ts";
import { ECHO_MAX_CHARS } from "../envelope.ts";
import { echoPrefix } from "../../infra/echo.ts";
import { cutEcho } from "../../infra/echo.ts";
import { isObjectRecord } from "../plugins/json-body.ts";
import { allowedProperties, describeFailure, fieldOfPath } from "../../infra/validation-message.ts";

export interface CompiledTool {
  def: AnyTool;
  check: TypeCheck<TObject>;
  /** The `tools/list` entry, as advertised. */
  entry: Record<string, unknown>;
}

export interface ToolTable {
  byName: Map<string, CompiledTool>;
  all: CompiledTool[];
  /** tools/list result per (endpoint, enabled set), built on first use. */
  listFor(endpoint: Endpoint, enabled: readonly string[] | null): Record<string, unknown>[];
  /** The tool if the store serves it on this endpoint. */
  served(name: string, endpoint: Endpoint, enabled: readonly string[] | null): CompiledTool | undefined;
}

/** Plain JSON of a TypeBox schema (symbols dropped), as MCP advertises it. */
function json(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

export function buildToolTable(tools: readonly AnyTool[]): ToolTable {
  const all: CompiledTool[] = tools.map((def) => ({
    def,
    check: TypeCompiler.Compile(def.input),
    entry: {
      name: def.name,
      title: def.title,
      description: def.description,
      inputSchema: json(def.input),
      outputSchema: json(outputSchemaOf(def.output)),
      annotations: { title: def.title, ...def.annotations },
    },
  }));
  for (const t of all) if (t.def.confirmation && !t.def.summarize) throw new Error(`write tool ${t.def.name} has no confirmation summary`);
  const byName = new Map(all.map((t) => [t.def.name, t]));
  if (byName.size !== all.length) throw new Error("duplicate MCP tool name in the registry");
  const lists = new Map<string, Record<string, unknown>[]>();
  const isServed = (t: CompiledTool, endpoint: Endpoint, enabled: readonly string[] | null) =>
    ENDPOINT_GROUPS[endpoint].includes(t.def.group) && (enabled === null || enabled.includes(t.def.name));
  return {
    byName,
    all,
    listFor(endpoint, enabled) {
      const key = `${endpoint}|${enabled === null ? "*" : enabled.join(",")}`;
      let list = lists.get(key);
      if (!list) {
        list = all.filter((t) => isServed(t, endpoint, enabled)).map((t) => t.entry);
        if (lists.size > 1000) lists.clear();
        lists.set(key, list);
      }
      return list;
    },
    served(name, endpoint, enabled) {
      const t = byName.get(name);
      return t && isServed(t, endpoint, enabled) ? t : undefined;
    },
  };
}

const MAX_UNKNOWN_SHOWN = 10;

/** First validation failure as the spec's argument error, with `details.field` as a dotted path. */
export function argumentError(t: CompiledTool, args: unknown): ActorError | null {
  if (t.check.Check(args)) return null;
  const first = t.check.Errors(args).First();
  if (!first) return fail("INVALID_ARGUMENT", "Arguments do not match the tool's input schema.");
  // The path and unknown names are the caller's own keys: echoed cut to ECHO_MAX_CHARS, at most MAX_UNKNOWN_SHOWN of
  // them, as REST's 400 bounds its field (a 20,000-character argument name was echoed whole, twice).
  const field = fieldOfPath(first.path) ?? "";
  const allowed = Object.keys(t.def.input.properties ?? {});
  const unknown =
    isObjectRecord(args)
      ? Object.keys(args)
          .filter((k) => !allowed.includes(k))
          .slice(0, MAX_UNKNOWN_SHOWN)
          .map(cutEcho)
      : [];
  if (first.type === ValueErrorType.ObjectRequiredProperty) {
    // A missing argument next to an unknown one is usually a misspelling (UCP's line_items for items): name both.
    if (unknown.length && !field.includes(".")) {
      return fail("MISSING_REQUIRED_ARGUMENT", `Missing required argument '${field}'; unknown argument${unknown.length > 1 ? "s" : ""} ${unknown.map((k) => `'${k}'`).join(", ")} (this tool takes ${allowed.join(", ")}).`, {
        field,
        unknown,
        allowed,
      });
    }
    return fail("MISSING_REQUIRED_ARGUMENT", `Missing required argument '${field}'.`, { field });
  }
  if (first.type === ValueErrorType.ObjectAdditionalProperties) {
    const extra = unknown[0];
    if (extra !== undefined) return fail("INVALID_ARGUMENT", `Unknown argument '${extra}'.`, { field: extra, allowed });
    // a key inside an argument (a cart line's `variantId`): the keys of the object it is in, as REST's 400 names them
    return fail("INVALID_ARGUMENT", `Unknown argument '${field}'.`, { field, allowed: allowedProperties(first.schema) ?? allowed });
  }
  // The rule in words, as REST's 400 says it ("must be a UUID", not TypeBox's "Expected string to match 'uuid'
  // format"; a custom kind such as CodePointString fails as "Expected kind '…'"): one wording on both surfaces.
  const rule = describeFailure(first.type, first.schema);
  const what = rule ? `must be ${rule.text}` : first.message;
  return fail("INVALID_ARGUMENT", `Invalid argument '${field || "arguments"}': ${what}.`, { field: field || "arguments", ...echoedValue(first.value) });
}

export { ECHO_MAX_CHARS };

/**
 * What an INVALID_ARGUMENT says about the offending value: scalars as they are, strings cut at ECHO_MAX_CHARS,
 * objects and arrays only by their type. The caller sent the value, so echoing it back whole only costs: up to
 * 1 MiB per answer, and a deeply nested one made `JSON.stringify` of the answer overflow (audit M1).
 */
export function echoedValue(value: unknown): { value?: unknown; valueType: string; valueTruncated?: true } {
  if (value === null) return { value: null, valueType: "null" };
  if (Array.isArray(value)) return { valueType: "array" };
  switch (typeof value) {
    case "string": {
      const head = echoPrefix(value);
      return head !== undefined ? { value: head, valueType: "string", valueTruncated: true } : { value, valueType: "string" };
    }
    case "number":
    case "boolean":
      return { value, valueType: typeof value };
    default:
      return { valueType: typeof value };
  }
}

/** REST-style codes thrown by reused application functions, mapped onto the MCP table when the tool says nothing. */
const GENERIC: Partial<Record<ErrorCode, ErrorCode>> = {
  validation_error: "INVALID_ARGUMENT",
  internal_error: "INTERNAL_ERROR",
  service_unavailable: "UPSTREAM_UNAVAILABLE",
  actor_unavailable: "UPSTREAM_UNAVAILABLE",
  store_not_found: "STORE_NOT_CONFIGURED",
};

function translate(def: AnyTool, err: unknown): unknown {
  if (!(err instanceof ActorError)) {
    const code = (err as { code?: unknown })?.code;
    if (typeof code === "string" && isErrorCode(code)) err = new ActorError(code, (err as Error).message, (err as { details?: Record<string, unknown> }).details);
    else return err;
  }
  const e = err as ActorError;
  const to = def.translate?.[e.code] ?? GENERIC[e.code];
  return to ? new ActorError(to, e.message, e.details) : e;
}

/** Scope, SANDBOX and feature-tier checks for a credentialed caller (same tables as REST). */
function checkAccess(def: AnyTool, ctx: ToolContext): void {
  const caller = ctx.caller;
  if (!caller) {
    if (def.auth === "key") throw fail("unauthorized", `${def.name} needs an X-Agent-Api-Key or an OAuth bearer token.`);
    return;
  }
  if (def.sandboxRefused && caller.tier === "SANDBOX") throw fail("sandbox_not_allowed", `SANDBOX keys cannot call ${def.name}. ${SANDBOX_NEXT_STEP}`, { tier: caller.tier });
  if (def.auth === "key" && def.scopes && def.scopes.length > 0 && !def.scopes.some((s) => caller.scopes.includes(s))) {
    throw fail("forbidden", `The credential lacks the "${def.scopes[0]}" scope needed for ${def.name}.`, { scope: def.scopes[0], acceptedScopes: [...def.scopes] });
  }
  if (def.feature && !tierHasFeature(caller.tier, def.feature)) {
    throw fail("feature_not_in_tier", `The ${caller.tier} tier does not include ${def.feature}. ${featureTierNextStep(lowestTierWith(def.feature))}`, {
      feature: def.feature,
      tier: caller.tier,
      requiredTier: lowestTierWith(def.feature),
    });
  }
  if (def.feature && !keyHasFeature(caller.tier, caller.plan, def.feature)) throw planLacksFeature(caller.tier, caller.plan!, def.feature);
}

export async function runTool(t: CompiledTool | undefined, name: string, args: unknown, ctx: ToolContext): Promise<ToolCallResult> {
  const site = ctx.svc.siteUrl;
  if (!t) {
    // The name is the caller's own text: quoted cut to ECHO_MAX_CHARS like every other echo (audit F-6: a
    // 100,000-character name came back whole three times, a 300 kB answer).
    const shown = cutEcho(name);
    return errorResult(site, "TOOL_NOT_FOUND", `No tool '${shown}' on this endpoint of store ${ctx.store.slug}; the tool set is fixed for the session (call tools/list).`, {
      tool: shown,
      store: ctx.store.slug,
      endpoint: ctx.endpoint,
    });
  }
  const def = t.def;
  const input = args ?? {};
  const bad = argumentError(t, input);
  if (bad) return resultFromThrown(site, bad);
  try {
    checkAccess(def, ctx);
    if (def.confirmation) {
      await ctx.confirm(await def.summarize!(input, ctx));
    }
    const out = (await def.handler(input, ctx)) as Record<string, unknown>;
    return successResult(out);
  } catch (err) {
    if (err instanceof AnsweredWithoutAsking) return successResult(err.answer);
    const e = translate(def, err);
    if (!(e instanceof ActorError)) log.error("mcp tool failed", { tool: name, store: ctx.store.slug, error: e as Error, stack: (e as Error)?.stack });
    return resultFromThrown(site, e);
  }
}
