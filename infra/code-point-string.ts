/**
 * Strings bounded in characters (Unicode code points), in one place (gateway and actors both import this; infra
 * imports neither): docs/conventions.md "bound strings in characters". The kind is registered with TypeBox when this
 * module is loaded, so a process that only runs actors (whose message schemas use it: the catalog items of
 * actors/store/schemas.ts) checks it as the gateway does. gateway/plugins/schema-formats.ts re-exports it.
 */
import { Kind, type TUnsafe, Type, TypeRegistry } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";

export const CODE_POINT_STRING = "CodePointString";

/** Characters as a person counts them (code points), not UTF-16 units. */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

interface CodePointOptions {
  minLength?: number;
  maxLength?: number;
  /** As `t.String`'s: an ECMAScript regular expression the whole value is tested with (not anchored unless it says so). */
  pattern?: string;
  description?: string;
}

const patterns = new Map<string, RegExp>();
const regexOf = (pattern: string): RegExp => {
  let re = patterns.get(pattern);
  if (!re) patterns.set(pattern, (re = new RegExp(pattern)));
  return re;
};

/** True when `value` is within the schema's bounds counted in code points (the pattern aside). */
function withinLength(schema: CodePointOptions, value: string): boolean {
  // UTF-16 length bounds the code point count from above (and from below at half): count only when it matters
  if (schema.maxLength !== undefined && value.length > schema.maxLength) {
    if (value.length > 2 * schema.maxLength || codePointLength(value) > schema.maxLength) return false;
  }
  if (schema.minLength !== undefined && value.length < 2 * schema.minLength && codePointLength(value) < schema.minLength) return false;
  return true;
}

TypeRegistry.Set<CodePointOptions>(CODE_POINT_STRING, (schema, value) => {
  if (typeof value !== "string" || !withinLength(schema, value)) return false;
  return schema.pattern === undefined || regexOf(schema.pattern).test(value);
});

/**
 * A string bounded in characters (Unicode code points), as JSON Schema's minLength/maxLength mean them and as the
 * spec counts them ("1 to 500 characters"). TypeBox's t.String counts UTF-16 units, which would refuse 300 emoji as
 * "over 500" or need a doubled bound that the OpenAPI document then shows; this kind checks code points and
 * documents the real bound (`type: string` with the same minLength/maxLength, and `pattern` when given).
 */
export function CodePointString(options: CodePointOptions): TUnsafe<string> {
  return Type.Unsafe<string>({ ...options, type: "string", [Kind]: CODE_POINT_STRING });
}

/**
 * A failed check of this kind as the keyword that failed: TypeBox reports any failure of a custom kind as
 * `ValueErrorType.Kind` ("Expected kind 'CodePointString'"), which the error texts read as the string's length rule.
 * A string within its length whose pattern failed is reported as `StringPattern` instead, so it is said as the
 * pattern (a blank title: "must contain a character other than white space", not "a string of 1 to 500 characters").
 * Any other check is returned as it is.
 */
export function codePointFailure<C extends { type?: number; schema?: unknown; value?: unknown }>(check: C): C {
  const schema = check.schema as (CodePointOptions & { [Kind]?: string }) | undefined;
  if (check.type !== ValueErrorType.Kind || schema?.[Kind] !== CODE_POINT_STRING || schema.pattern === undefined) return check;
  return typeof check.value === "string" && withinLength(schema, check.value) ? { ...check, type: ValueErrorType.StringPattern } : check;
}
