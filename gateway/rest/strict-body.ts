/**
 * A key a write route's body schema does not have, at any level, is 400 `validation_error` naming it
 * (`details.field`, `details.allowed`), checked on the raw body in the route's `transform` hook: the gateway's
 * normaliser (`normalize: "typebox"`, TypeBox Clean) drops unknown keys before the schema sees them, so a misspelt
 * key was a silent 200 and a replacing write stored other terms than the merchant sent: `usageLimt: 1` made a
 * single-use coupon unlimited, `returnWindow: 7` put the 30-day default in force, a zone's `freeAbove` never shipped
 * free (audit W-7; the admin search settings had the same fix, audit U MED-4, and now use this one). Every REST route
 * with a JSON body uses it (docs/conventions.md, "Request bodies"), except the OAuth endpoints, the protocol bridges and
 * the dashboard's forms, whose bodies follow their own rules.
 *
 * Every object of the schema counts as closed unless it says otherwise (`additionalProperties: true` or a schema):
 * an Elysia `t.Object` without the keyword is open to TypeBox, but here the keys it lists are all there is. Records
 * (free keys such as synonyms) and `t.Unknown()` items (checked one by one elsewhere) are not looked into. The OpenAPI
 * document marks the same objects `additionalProperties: false` on every route whose transform hooks hold a strictBody
 * hook (gateway/openapi/complete.ts), which is why a route's check is always such a hook (strictJsonBody, or strictBody
 * among its own hooks) and never a bare refuseUnknownKeys call.
 */
import { Kind, type TSchema } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { fail } from "../../actors/runtime/errors.ts";
import { fieldOfPath, validationAnswer } from "../../infra/validation-message.ts";
import { MAX_JSON_ARRAY_ITEMS } from "../plugins/json-depth.ts";

interface UnknownKey {
  /** TypeBox-style path of the unknown key: "/zones/0/freeAbove". */
  path: string;
  /** The object schema that does not have it (its properties are the allowed keys). */
  parent: TSchema;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** The first key of `value` that `schema` does not have, depth first, or null. */
export function unknownKeyOf(schema: TSchema, value: unknown, path = ""): UnknownKey | null {
  switch (schema[Kind]) {
    case "Object": {
      if (!isPlainObject(value)) return null;
      const props = (schema.properties ?? {}) as Record<string, TSchema>;
      const open = schema.additionalProperties !== undefined && schema.additionalProperties !== false;
      for (const [key, v] of Object.entries(value)) {
        // own keys only: "constructor" or "__proto__" would find Object.prototype's and pass
        const inner = Object.hasOwn(props, key) ? props[key] : undefined;
        if (!inner) {
          if (open) continue;
          return { path: `${path}/${key}`, parent: schema };
        }
        const found = unknownKeyOf(inner, v, `${path}/${key}`);
        if (found) return found;
      }
      return null;
    }
    case "Array": {
      if (!Array.isArray(value) || !schema.items) return null;
      // items that cannot hold a key (t.Unknown items, checked one by one elsewhere; strings, numbers) are not walked,
      // and neither is an array past the body bound, which the global bound check refuses: this hook can run first, and
      // walking 2.7 M items of an unauthenticated 5 MiB body held the event loop ~1.5 s (test/http/wide-bodies.test.ts)
      const itemKind = (schema.items as TSchema)[Kind];
      if (itemKind !== "Object" && itemKind !== "Array" && itemKind !== "Union") return null;
      if (value.length > MAX_JSON_ARRAY_ITEMS) return null;
      for (let i = 0; i < value.length; i++) {
        const found = unknownKeyOf(schema.items as TSchema, value[i], `${path}/${i}`);
        if (found) return found;
      }
      return null;
    }
    case "Union": {
      const members = (schema.anyOf ?? []) as TSchema[];
      // the member the value is (an open object member passes Check with extra keys), else the one object member
      const member =
        members.find((m) => Value.Check(m, value)) ??
        (isPlainObject(value) ? onlyOne(members.filter((m) => m[Kind] === "Object")) : undefined);
      return member ? unknownKeyOf(member, value, path) : null;
    }
    default:
      return null;
  }
}

const onlyOne = <X>(xs: X[]): X | undefined => (xs.length === 1 ? xs[0] : undefined);

/** Throws the 400 naming the first unknown key of a raw body (see the module comment); a body that is no object passes (the schema's own 400). */
export function refuseUnknownKeys(schema: TSchema, raw: unknown): void {
  const found = unknownKeyOf(schema, raw);
  if (!found) return;
  const a = validationAnswer("body", fieldOfPath(found.path), { type: ValueErrorType.ObjectAdditionalProperties, path: found.path }, found.parent);
  throw fail("validation_error", a.message, a.details);
}

/** A `transform` hook refusing the unknown keys of a route's body (strictBody). */
export type StrictBodyHook = (ctx: { body: unknown }) => void;

/**
 * Each hook strictBody made, with the schema it checks: the OpenAPI document marks the request body of every route
 * holding one (`strictSchemaOf`, gateway/openapi/complete.ts). Read from the routes' own hooks rather than a list of
 * routes kept beside them, so the document says what runs: a route is marked because its hook is there, and a new
 * route using the helper cannot be left out.
 */
const strictHooks = new WeakMap<StrictBodyHook, TSchema>();

/**
 * A route's `transform` hook refusing unknown keys of its body: `transform: strictBody(Schema)`, or one of a route's
 * transform hooks when it has more work there (checkout, search). A route that only checks its body uses
 * strictJsonBody instead.
 */
export function strictBody(schema: TSchema): StrictBodyHook {
  const hook: StrictBodyHook = ({ body }) => refuseUnknownKeys(schema, body);
  strictHooks.set(hook, schema);
  return hook;
}

/**
 * A route's body schema and its strict `transform` from one schema, spread into the route's options:
 * `{ ...strictJsonBody(Schema), response, detail }`. The schema is named once, and the handler's `body` keeps its
 * static type (`body` is the schema's own type here).
 */
export function strictJsonBody<S extends TSchema>(schema: S): { body: S; transform: StrictBodyHook } {
  return { body: schema, transform: strictBody(schema) };
}

/**
 * The schema whose unknown keys a route's transform hooks refuse (one of them made by strictBody), or undefined.
 * `transform` as Elysia keeps it on a registered route: a hook, `{ fn }`, or a list of either (the app's global
 * hooks come first).
 */
export function strictSchemaOf(transform: unknown): TSchema | undefined {
  for (const h of Array.isArray(transform) ? (transform as unknown[]) : [transform]) {
    const fn = typeof h === "function" ? h : isPlainObject(h) ? h.fn : undefined;
    const schema = typeof fn === "function" ? strictHooks.get(fn as StrictBodyHook) : undefined;
    if (schema) return schema;
  }
  return undefined;
}
