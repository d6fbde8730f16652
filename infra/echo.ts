/**
 * How much of a caller's own value an error may quote back, in one place (gateway and actors both import this; infra
 * imports neither): REST 400 texts, MCP INVALID_ARGUMENT `details.value`. Echoing a value whole costs up to the body
 * limit per answer and can overflow JSON.stringify (audits D-M1, H-1; conventions.md).
 */
export const ECHO_MAX_CHARS = 100;

/**
 * The first ECHO_MAX_CHARS characters (code points) of `v`, or undefined when `v` has no more than that. Counted in
 * characters as every bound of ours is (docs/conventions.md): a cut at 100 UTF-16 units split an emoji and quoted a
 * lone surrogate half (helper C, session 22). Walks at most 200 units, whatever the string's length.
 */
export function echoPrefix(v: string): string | undefined {
  if (v.length <= ECHO_MAX_CHARS) return undefined;
  let i = 0;
  for (let n = 0; n < ECHO_MAX_CHARS && i < v.length; n++) {
    const c = v.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < v.length && (v.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
  }
  return i >= v.length ? undefined : v.slice(0, i);
}

/** A caller's string cut to ECHO_MAX_CHARS characters (an ellipsis says it was cut). */
export function cutEcho(v: string): string {
  const head = echoPrefix(v);
  return head === undefined ? v : `${head}…`;
}

/** A short, bounded description of a caller's value: never its whole text (review H, finding 1). */
export function preview(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(cutEcho(v));
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? "" : "s"}`;
  if (v === null) return "null";
  if (typeof v === "object") return "an object";
  return String(v).slice(0, ECHO_MAX_CHARS);
}
