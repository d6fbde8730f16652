/**
 * The routes an app serves, read once when it starts, for the two answers the error plugin cannot give from the
 * failing request alone: which methods a path does take (a wrong method is 405 with `Allow`, not 404), and which
 * query/path/body schema a route declared (Elysia's t.Integer/t.Numeric report a bound they fail while decoding
 * without the field's name, so the field is found by decoding again against the declared schema).
 */
import type { TSchema } from "@sinclair/typebox";
import { TransformDecodeError, Value } from "@sinclair/typebox/value";

export interface RouteSchemas {
  params?: TSchema;
  query?: TSchema;
  body?: TSchema;
}

interface Entry {
  method: string;
  pattern: RegExp;
}

/** The shape of an Elysia app read here: its routes and Bun's native routes from `serve.routes`. */
export interface AppLike {
  routes: ReadonlyArray<{ method: string; path: string; hooks?: Record<string, unknown> }>;
  config?: { serve?: { routes?: Record<string, unknown> } };
}

/** An Elysia path (`/a/:id`, `/a/:id?`, `/files/*`) as a regular expression over the request's pathname. */
export function pathPattern(path: string): RegExp {
  const parts = path.split("/").map((seg) => {
    if (seg === "*") return "(?:.*)";
    if (seg.startsWith(":")) return seg.endsWith("?") ? "?(?:[^/]*)" : "[^/]+";
    return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  });
  // an optional segment's pattern starts with "?", making its slash optional too: "/a/:id?" matches "/a"
  return new RegExp(`^${parts.join("/")}/?$`);
}

const isSchema = (v: unknown): v is TSchema => !!v && typeof v === "object";

export class RouteTable {
  private readonly entries: Entry[] = [];
  private readonly schemas = new Map<string, RouteSchemas>();

  constructor(app: AppLike) {
    for (const r of app.routes) {
      this.entries.push({ method: r.method.toUpperCase(), pattern: pathPattern(r.path) });
      const h = r.hooks ?? {};
      this.schemas.set(`${r.method.toUpperCase()} ${r.path}`, {
        ...(isSchema(h.params) ? { params: h.params } : {}),
        ...(isSchema(h.query) ? { query: h.query } : {}),
        ...(isSchema(h.body) ? { body: h.body } : {}),
      });
    }
    for (const [path, handlers] of Object.entries(app.config?.serve?.routes ?? {})) {
      // Bun's native routes (health probes): { GET: handler } objects name their methods
      if (handlers && typeof handlers === "object" && !(handlers instanceof Response)) {
        for (const m of Object.keys(handlers)) this.entries.push({ method: m.toUpperCase(), pattern: pathPattern(path) });
      }
    }
  }

  /** Methods some route takes at this pathname (sorted, unique); empty when no route has the path at all. */
  allowedMethods(pathname: string): string[] {
    const out = new Set<string>();
    for (const e of this.entries) if (e.method !== "ALL" && e.pattern.test(pathname)) out.add(e.method);
    return [...out].sort();
  }

  schemasOf(method: string, routePath: string | undefined): RouteSchemas | undefined {
    return routePath ? this.schemas.get(`${method.toUpperCase()} ${routePath}`) : undefined;
  }
}

/**
 * Where decoding `value` against `schema` throws inside a transform (the decode-time bound checks of Elysia's
 * numeric types), as a TypeBox path; undefined when decoding passes or fails for another reason. Object schemas are
 * tried property by property, so a sibling the route coerces differently (a query t.Number) cannot hide the field.
 */
export function decodeFailurePath(schema: TSchema | undefined, value: unknown): string | undefined {
  if (!schema || value === undefined || value === null) return undefined;
  const props = (schema as { properties?: Record<string, TSchema> }).properties;
  if (props && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, sub] of Object.entries(props)) {
      const v = (value as Record<string, unknown>)[k];
      if (v === undefined) continue;
      const inner = decodeFailurePath(sub, v);
      if (inner !== undefined) return `/${k}${inner}`;
    }
    return undefined;
  }
  try {
    Value.Decode(schema, value);
  } catch (e) {
    if (e instanceof TransformDecodeError) return e.path;
  }
  return undefined;
}
