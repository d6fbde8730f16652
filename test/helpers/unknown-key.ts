/** The exact answer to a body key its route's schema does not have (gateway/rest/strict-body.ts). */
import { expect } from "bun:test";

/** 400 validation_error naming `field`, with the keys its object does have (`allowed`). */
export function expectUnknownKey(r: { status: number; body: any }, field: string, allowed: string[]): void {
  const message = `Property '${field}' should not be provided; ${allowed.length > 0 ? `allowed: ${allowed.join(", ")}` : "this body takes no fields (send none, or {})"}`;
  expect(r.status).toBe(400);
  expect(r.body).toEqual({
    success: false,
    error: `Invalid body field '${field}': ${message}`,
    code: "validation_error",
    details: { location: "body", field, allowed, errors: [{ field, message }] },
  });
}
