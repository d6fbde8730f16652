/**
 * The text and details of a schema-failure 400, read from the TypeBox schema that failed: an agent told only
 * "Expected union value" cannot tell what to send instead (audit E). Enums name their allowed values
 * (`details.allowed`), numbers their bounds (`details.minimum`/`maximum`), strings their length bounds, pattern or
 * format (`details.pattern`/`format`), a missing field its rule (`details.required`), so every route gets the same
 * answer for the same kind of schema without special cases (audit A2-F11: these kept TypeBox's own text).
 *
 * In infra (it was gateway/plugins until session 22): pure functions over TypeBox errors, read by the gateway's 400s
 * and MCP argument errors and by the store actor's per-item ingestion errors, and an actor must not import the gateway.
 */
import { ValueErrorType } from "@sinclair/typebox/errors";
import { SECRET_FIELD } from "./log.ts";
import { cutEcho, ECHO_MAX_CHARS, preview } from "./echo.ts";
import { codePointFailure, codePointLength } from "./code-point-string.ts";
import { NOT_BLANK_PATTERN } from "../actors/store/schemas.ts";

/** The parts of a TypeBox ValueError read here. */
export interface FailedCheck {
  type?: number;
  path?: string;
  message?: string;
  value?: unknown;
  schema?: unknown;
  /** A union's failure: each member's own errors (TypeBox 0.34 `ValueError.errors`, one iterator per member). */
  errors?: readonly { First(): FailedCheck | undefined }[];
}

/**
 * The failure inside a union member, when the value is that member's kind and broke one of its inner rules: an
 * object-or-null field (`negotiation`) whose object breaks `excludedCategories`' maxItems was answered "must be an
 * object or null (got an object)", which names neither the field nor the rule (G2's note). A member failing deeper
 * than the union's own path took the value's kind; when exactly one did, its first error is the answer. Otherwise
 * (the value is none of the members' kinds, or a scalar union such as t.Numeric) the union's rule stays the answer.
 */
export function innerUnionFailure(check: FailedCheck | undefined): FailedCheck | undefined {
  if (check?.type !== ValueErrorType.Union || !Array.isArray(check.errors)) return undefined;
  const depth = (path: string | undefined) => (path ? path.split("/").length : 0);
  const inner = check.errors.map((it) => it.First()).filter((e): e is FailedCheck => !!e && depth(e.path) > depth(check.path));
  return inner.length === 1 ? (innerUnionFailure(inner[0]) ?? inner[0]) : undefined;
}

/** Postgres text cannot hold NUL: string fields stored as text refuse it with this pattern. */
export const NO_NUL_PATTERN = "^[^\\u0000]*$";
/**
 * NO_NUL_PATTERN and NOT_BLANK_PATTERN in one (a schema has one pattern): a value that must say something, such as a
 * destination's postal code, which white space only would match as no postal code at all (helper D, session 21).
 */
export const NON_BLANK_NO_NUL_PATTERN = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$";
/** A URL a person may open: http or https only (no javascript:, data:, file:; audit A2-F7). */
export const HTTP_URL_PATTERN = "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$";

/** Patterns said in words; any other pattern is quoted as it is. */
const PATTERN_RULES: Record<string, string> = {
  [NO_NUL_PATTERN]: "a string without NUL characters",
  [NOT_BLANK_PATTERN]: "a string with a character other than white space",
  [NON_BLANK_NO_NUL_PATTERN]: "a string with a character other than white space and without NUL characters",
  [HTTP_URL_PATTERN]: "an http or https URL",
};

/** String formats said in words; any other format is named as it is. */
const FORMAT_RULES: Record<string, string> = {
  uuid: "a UUID",
  "date-time": "an RFC 3339 date-time such as 2026-01-31T12:00:00Z",
  date: "a date such as 2026-01-31",
  uri: "an absolute URI",
  email: "an e-mail address",
};

/** A schema as plain JSON Schema keywords (TypeBox schemas are that, plus symbols). */
interface SchemaLike {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: SchemaLike[];
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, unknown>;
}

/** What a value must be: a phrase for the message and the machine-readable facts for `details`. */
export interface Rule {
  text: string;
  facts: Record<string, unknown>;
}

/**
 * True when any segment of a dotted field path names a secret (the log redactor's list: password, secret, token, key,
 * …): its value is never quoted back (security audit C-6), error bodies end up in client logs, proxies and APM.
 */
export function isSecretField(field: string): boolean {
  return field.split(".").some((seg) => SECRET_FIELD.test(seg));
}

/** What a secret field's value was, without any of it: its kind and, for a string, its length. */
export function secretPreview(v: unknown): string {
  if (typeof v === "string") return `a string of ${codePointLength(v)} characters, not shown`;
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array, not shown";
  return `${typeof v === "object" ? "an object" : `a ${typeof v}`}, not shown`;
}

function asSchema(s: unknown): SchemaLike | undefined {
  return s && typeof s === "object" ? (s as SchemaLike) : undefined;
}

const isNumeric = (s: SchemaLike) => s.type === "integer" || s.type === "number";

function quote(v: unknown): string {
  return typeof v === "string" ? `'${v}'` : String(v);
}

function listed(values: unknown[]): string {
  return values.map(quote).join(", ");
}

function numberRule(s: SchemaLike): Rule {
  const kind = s.type === "integer" ? "an integer" : "a number";
  const facts: Record<string, unknown> = { type: s.type };
  const low = s.minimum !== undefined ? { n: s.minimum, op: "≥" } : s.exclusiveMinimum !== undefined ? { n: s.exclusiveMinimum, op: ">" } : undefined;
  const high = s.maximum !== undefined ? { n: s.maximum, op: "≤" } : s.exclusiveMaximum !== undefined ? { n: s.exclusiveMaximum, op: "<" } : undefined;
  for (const k of ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"] as const) if (s[k] !== undefined) facts[k] = s[k];
  if (low?.op === "≥" && high?.op === "≤") return { text: `${kind} from ${low.n} to ${high.n}`, facts };
  const bounds = [low, high].filter((b) => b !== undefined).map((b) => `${b.op} ${b.n}`);
  return { text: [kind, bounds.join(" and ")].filter(Boolean).join(" "), facts };
}

function stringRule(s: SchemaLike): Rule {
  const facts: Record<string, unknown> = { type: "string" };
  if (s.minLength !== undefined) facts.minLength = s.minLength;
  if (s.maxLength !== undefined) facts.maxLength = s.maxLength;
  const chars = (n: number) => `${n} character${n === 1 ? "" : "s"}`;
  let text = "a string";
  if (s.minLength !== undefined && s.maxLength !== undefined) text = `a string of ${s.minLength} to ${chars(s.maxLength)}`;
  else if (s.maxLength !== undefined) text = `a string of at most ${chars(s.maxLength)}`;
  else if (s.minLength !== undefined) text = `a string of at least ${chars(s.minLength)}`;
  if (s.format) facts.format = s.format;
  return { text, facts };
}

/**
 * The rule a schema states, or undefined when it says nothing more useful than TypeBox's own message.
 * Elysia's t.Integer/t.Numeric are unions of the number and a numeric string (for query strings); the string twin
 * is the same rule, so it is left out of the description.
 */
export function describeSchema(schema: unknown): Rule | undefined {
  const s = asSchema(schema);
  if (!s) return undefined;
  if ("const" in s) return { text: quote(s.const), facts: { allowed: [s.const] } };
  if (Array.isArray(s.enum)) return { text: `one of ${listed(s.enum)}`, facts: { allowed: [...s.enum] } };
  if (Array.isArray(s.anyOf)) {
    let members = s.anyOf.filter((m): m is SchemaLike => !!asSchema(m));
    if (members.some(isNumeric)) members = members.filter((m) => !(m.type === "string" && (m.format === "integer" || m.format === "numeric")));
    if (members.length > 0 && members.every((m) => "const" in m)) {
      const allowed = members.map((m) => m.const);
      return { text: allowed.length === 1 ? quote(allowed[0]) : `one of ${listed(allowed)}`, facts: { allowed } };
    }
    const rules = members.map(describeSchema);
    if (rules.length === 0 || rules.some((r) => r === undefined)) return undefined;
    if (rules.length === 1) return rules[0];
    return { text: rules.map((r) => r!.text).join(" or "), facts: {} };
  }
  if (isNumeric(s)) return numberRule(s);
  if (s.type === "string") return stringRule(s);
  if (s.type === "boolean") return { text: "true or false", facts: { type: "boolean" } };
  if (s.type === "object") return { text: "an object", facts: { type: "object" } };
  if (s.type === "array") return { text: "an array", facts: { type: "array" } };
  if (s.type === "null") return { text: "null", facts: { type: "null" } };
  return undefined;
}

/**
 * The rule of one string keyword that failed (pattern or format), or of an array's item bounds: these are said
 * alone, since the value already has the type and the length the schema's other keywords ask for.
 */
export function describeKeyword(type: number | undefined, schema: unknown): Rule | undefined {
  const s = asSchema(schema);
  if (!s) return undefined;
  if (type === ValueErrorType.StringPattern && typeof s.pattern === "string") {
    const words = PATTERN_RULES[s.pattern];
    return { text: words ?? `a string matching the pattern '${s.pattern}'`, facts: { type: "string", pattern: s.pattern } };
  }
  if ((type === ValueErrorType.StringFormat || type === ValueErrorType.StringFormatUnknown) && typeof s.format === "string") {
    return { text: FORMAT_RULES[s.format] ?? `a string in the '${s.format}' format`, facts: { type: "string", format: s.format } };
  }
  const items = (n: number) => `${n} item${n === 1 ? "" : "s"}`;
  if (type === ValueErrorType.ArrayMaxItems && s.maxItems !== undefined) return { text: `an array of at most ${items(s.maxItems)}`, facts: { type: "array", maxItems: s.maxItems } };
  if (type === ValueErrorType.ArrayMinItems && s.minItems !== undefined) return { text: `an array of at least ${items(s.minItems)}`, facts: { type: "array", minItems: s.minItems } };
  return undefined;
}

/** Value errors whose message is better said as the schema's rule. */
const RULE_ERRORS = new Set<number>([
  ValueErrorType.String,
  ValueErrorType.Null,
  ValueErrorType.Union,
  ValueErrorType.Kind,
  ValueErrorType.Literal,
  ValueErrorType.Boolean,
  ValueErrorType.Object,
  ValueErrorType.Array,
  ValueErrorType.Integer,
  ValueErrorType.IntegerMinimum,
  ValueErrorType.IntegerMaximum,
  ValueErrorType.IntegerExclusiveMinimum,
  ValueErrorType.IntegerExclusiveMaximum,
  ValueErrorType.Number,
  ValueErrorType.NumberMinimum,
  ValueErrorType.NumberMaximum,
  ValueErrorType.NumberExclusiveMinimum,
  ValueErrorType.NumberExclusiveMaximum,
  ValueErrorType.StringMinLength,
  ValueErrorType.StringMaxLength,
]);

/** The rule a failed check broke, in words, as every 400 and MCP argument error says it (undefined: none to say). */
export function describeFailure(type: number | undefined, schema: unknown): Rule | undefined {
  if (type === undefined) return undefined;
  return RULE_ERRORS.has(type) ? describeSchema(schema) : describeKeyword(type, schema);
}

/** The property names an object schema allows, for an "unknown property" answer. */
export function allowedProperties(schema: unknown): string[] | undefined {
  const props = asSchema(schema)?.properties;
  return props && typeof props === "object" ? Object.keys(props) : undefined;
}

export interface ValidationAnswer {
  message: string;
  details: Record<string, unknown>;
}

/**
 * The 400 for one failed check. `location` is where the value came from (body, query, params, headers);
 * `field` the dotted path inside it, when known. `parentSchema` is the object schema holding the field (for an
 * unknown property, whose allowed siblings are then listed).
 */
export function validationAnswer(location: string, field: string | undefined, failed: FailedCheck | undefined, parentSchema?: unknown): ValidationAnswer {
  // a CodePointString with a pattern (NonBlank, a remove entry without NUL) fails as its kind: said as the pattern when its length is right
  const check = failed && codePointFailure(failed);
  const inner = innerUnionFailure(check);
  if (inner) return validationAnswer(location, fieldOfPath(inner.path), inner, inner.schema);
  const shown = (v: unknown) => (field !== undefined && isSecretField(field) ? secretPreview(v) : preview(v));
  let what = typeof check?.message === "string" ? check.message.slice(0, ECHO_MAX_CHARS * 2) : "invalid value";
  let facts: Record<string, unknown> = {};
  switch (check?.type) {
    case ValueErrorType.ObjectAdditionalProperties: {
      what = field ? `Property '${field}' should not be provided` : "Value should not be provided";
      const allowed = allowedProperties(parentSchema);
      if (allowed) {
        // a route that takes no body (noBody(): an empty closed object) says so, not "allowed: " and nothing
        what += allowed.length > 0 ? `; allowed: ${allowed.join(", ")}` : "; this body takes no fields (send none, or {})";
        facts = { allowed };
      }
      break;
    }
    case ValueErrorType.ObjectRequiredProperty: {
      // the check carries the missing property's own schema: say what to send
      const rule = describeSchema(check.schema);
      what = rule ? `must be ${rule.text} (missing)` : "is required (missing)";
      facts = { required: true, ...rule?.facts };
      break;
    }
    default: {
      const rule = describeFailure(check?.type, check?.schema);
      if (rule) {
        // no value at all (a JSON request with an empty body): "(missing)", as a missing field says, not "(got undefined)"
        what = `must be ${rule.text} ${check?.value === undefined ? "(missing)" : `(got ${shown(check.value)})`}`;
        facts = rule.facts;
      }
    }
  }
  return {
    message: field ? `Invalid ${location} field '${field}': ${what}` : `Invalid ${location}: ${what}`,
    details: { location, ...(field ? { field } : {}), ...facts, errors: [{ field, message: what }] },
  };
}

/**
 * TypeBox paths ("/filters/minPrice", "/items/0/quantity") as the dotted field names our errors use. A segment can
 * be the caller's own object key (inside a `t.Record`), which the 400 echoes three times: each segment is cut to
 * ECHO_MAX_CHARS like every other echoed value (review R3-2).
 */
export function fieldOfPath(path: string | undefined): string | undefined {
  if (!path) return undefined;
  const segments = path.replace(/^\//, "").split("/");
  return segments.map(cutEcho).join(".") || undefined;
}
