/**
 * How much of a caller's own value an error may quote back, in one place (gateway and actors both import this; infra
 * imports neither): REST 400 texts, MCP INVALID_ARGUMENT `details.value`. Echoing a value whole costs up to the body
 * limit per answer and can overflow JSON.stringify (audits D-M1, H-1; conventions.md).
 */
export const ECHO_MAX_CHARS = 100;

/** A caller's string cut to ECHO_MAX_CHARS characters (an ellipsis says it was cut). */
export function cutEcho(v: string): string {
  return v.length > ECHO_MAX_CHARS ? `${v.slice(0, ECHO_MAX_CHARS)}…` : v;
}

/** A short, bounded description of a caller's value: never its whole text (review H, finding 1). */
export function preview(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(cutEcho(v));
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? "" : "s"}`;
  if (v === null) return "null";
  if (typeof v === "object") return "an object";
  return String(v).slice(0, ECHO_MAX_CHARS);
}
