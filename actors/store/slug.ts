/**
 * A store's slug: lower-case letters, digits and hyphens, starting with a letter or digit, 63 at most (a DNS label's
 * bound). One definition for store creation, every route with a `{slug}`, the MCP endpoint paths, OAuth resources and
 * the dashboard; each of them had its own copy of the pattern (eleven), and two differed in their length bound.
 */
import { Type as T } from "@sinclair/typebox";

export const STORE_SLUG_PATTERN = "^[a-z0-9][a-z0-9-]{0,62}$";
const STORE_SLUG = new RegExp(STORE_SLUG_PATTERN);

/** The same pattern without its anchors, to embed in a path expression. */
export const STORE_SLUG_PART = "[a-z0-9][a-z0-9-]{0,62}";

export const isStoreSlug = (s: string): boolean => STORE_SLUG.test(s);

/** A fresh schema of a slug for each use: Elysia may annotate the schema objects of a route it compiles. */
export const storeSlugSchema = () => T.String({ minLength: 1, maxLength: 63, pattern: STORE_SLUG_PATTERN });
