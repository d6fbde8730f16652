/**
 * Numbers in requests (REST audit A-2; docs/conventions.md, "Request bodies and query strings"):
 *  - in a JSON body a number is a JSON number. Elysia's `t.Integer` (and `t.Numeric`) are a union of the number and
 *    a numeric string, meant for query strings, so a body took `"0x10"` as 16 cents of refund, `"1e2"`, `" 150"`
 *    or `"2"`; its `t.Number` never did. `strictBodyNumbers` rewrites, once when the app is built, every body schema
 *    of every route so those unions are the plain TypeBox number they wrap: a string is then the schema's 400
 *    naming the field (`must be an integer ≥ 1 (got "0x10")`), like a `t.Number` field's.
 *  - a query or path value is text by nature and stays converted, but only from plain decimal notation:
 *    `useStrictNumericFormats` replaces Elysia's "integer" / "numeric" string formats (anything `+value` reads:
 *    hex, exponents, surrounding spaces, "12.0") with decimal patterns.
 */
import { FormatRegistry, Kind, TransformKind, type TSchema } from "@sinclair/typebox";

/** An optional minus sign and decimal digits (leading zeros allowed: `007` is 7). */
const DECIMAL_INTEGER = /^-?\d+$/;
/** The same, with an optional fraction (`1.5`, `-0.25`); no exponent, no sign-only or dot-only forms. */
const DECIMAL_NUMBER = /^-?\d+(?:\.\d+)?$/;

/** Call once, after Elysia is imported (it registers its own, laxer, formats only when none is set). */
export function useStrictNumericFormats(): void {
  FormatRegistry.Set("integer", (value) => DECIMAL_INTEGER.test(value));
  FormatRegistry.Set("numeric", (value) => DECIMAL_NUMBER.test(value));
}

type Schema = TSchema & Record<string | symbol, unknown>;

const isSchema = (v: unknown): v is Schema => !!v && typeof v === "object";

/**
 * Elysia's number-or-numeric-string transform (`t.Integer`, `t.Numeric`): a decoded union of a string with format
 * "integer"/"numeric" and the number schema it stands for. Returns that number schema, or undefined.
 */
function numberInsideStringUnion(s: Schema): Schema | undefined {
  if (!(TransformKind in s) || s[Kind] !== "Union" || !Array.isArray(s.anyOf) || s.anyOf.length !== 2) return undefined;
  const [a, b] = s.anyOf as Schema[];
  const isNumericString = (x: Schema | undefined) => x?.type === "string" && (x.format === "integer" || x.format === "numeric");
  const isNumber = (x: Schema | undefined) => x?.[Kind] === "Integer" || x?.[Kind] === "Number";
  if (isNumericString(a) && isNumber(b)) return b;
  if (isNumericString(b) && isNumber(a)) return a;
  return undefined;
}

/** `s` with every such union below it replaced by its number; the same object when nothing changed. */
export function withJsonNumbers(s: Schema): Schema {
  const inner = numberInsideStringUnion(s);
  if (inner) return carryModifiers(s, inner);
  let out: Schema | undefined;
  const put = (key: string, value: unknown) => {
    out ??= { ...s };
    out[key] = value;
  };
  for (const key of ["properties", "patternProperties"] as const) {
    const map = s[key];
    if (isSchema(map)) {
      const next = withJsonNumbersInMap(map as Record<string, Schema>);
      if (next) put(key, next);
    }
  }
  for (const key of ["anyOf", "allOf", "oneOf"] as const) {
    const list = s[key];
    if (Array.isArray(list)) {
      const next = list.map((x: unknown) => (isSchema(x) ? withJsonNumbers(x) : x));
      if (next.some((x, i) => x !== list[i])) put(key, next);
    }
  }
  for (const key of ["items", "additionalProperties", "not"] as const) {
    const v = s[key];
    if (isSchema(v)) {
      const next = withJsonNumbers(v);
      if (next !== v) put(key, next);
    }
  }
  return out ?? s;
}

/** A `properties` / `patternProperties` map with `withJsonNumbers` applied to each schema, or undefined when none changed. */
function withJsonNumbersInMap(map: Record<string, Schema>): Record<string, Schema> | undefined {
  let changed = false;
  const next: Record<string, Schema> = {};
  for (const [k, v] of Object.entries(map)) {
    next[k] = isSchema(v) ? withJsonNumbers(v) : v;
    if (next[k] !== v) changed = true;
  }
  return changed ? next : undefined;
}

/** The union's own markers (a property's `t.Optional`, its `t.ReadonlyOptional`) kept on the number that replaces it. */
function carryModifiers(union: Schema, inner: Schema): Schema {
  const symbols = Object.getOwnPropertySymbols(union).filter((k) => k !== Kind && k !== TransformKind);
  if (symbols.length === 0) return inner;
  const out: Schema = { ...inner };
  for (const k of symbols) out[k] = union[k];
  return out;
}

/** The parts of an Elysia app read here: each route's hooks, whose `body` is the schema its validator is built from. */
interface AppRoutes {
  routes: ReadonlyArray<{ hooks?: { body?: unknown } }>;
}

/**
 * Rewrites every route's body schema in place (its validator is built from that object on the route's first
 * request, so a new object would not be seen). Call once the routes are mounted and before the app serves.
 * Nested schemas are replaced, never changed, so a schema shared with a query stays as it is.
 */
export function strictBodyNumbers(app: AppRoutes): void {
  for (const route of app.routes) {
    const body = route.hooks?.body;
    if (!isSchema(body)) continue;
    const next = withJsonNumbers(body);
    if (next === body) continue;
    if (numberInsideStringUnion(body)) throw new Error("a route's whole body is a number-or-string union: declare it as a JSON number");
    for (const key of Object.keys(next)) (body as Record<string, unknown>)[key] = next[key];
  }
}
