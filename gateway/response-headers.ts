/**
 * Copies an answer's headers onto Elysia's `set.headers` under lower-case names. The edge hook sets defaults in lower
 * case (`cache-control: no-store` on the API); an answer naming the same header in another case ("Cache-Control", as
 * the x402 library writes it) must replace the default, not be sent beside it as a second value.
 */
export function assignHeaders(target: Record<string, string | number>, headers: Readonly<Record<string, string | number>>): void {
  for (const [name, value] of Object.entries(headers)) target[name.toLowerCase()] = value;
}
