/** The spec's envelopes, as TypeBox models (so OpenAPI shows them) and as builders used by every route. */
import { t, type TSchema } from "elysia";
import type { ErrorCode } from "../actors/runtime/errors.ts";

/** How much of a caller's own value an error may quote back (infra/echo.ts). */
export { ECHO_MAX_CHARS } from "../infra/echo.ts";

export const ErrorEnvelope = t.Object(
  {
    success: t.Literal(false),
    error: t.String({ description: "Human-readable message." }),
    code: t.Optional(t.String({ description: "Stable error code (see /docs/errors)." })),
    details: t.Optional(t.Record(t.String(), t.Unknown())),
  },
  { $id: "#/components/schemas/ErrorEnvelope", title: "ErrorEnvelope" },
);

export function SuccessEnvelope<S extends TSchema>(data: S, title?: string) {
  return t.Object(
    { success: t.Literal(true), data, meta: t.Optional(t.Record(t.String(), t.Unknown())) },
    title ? { title } : {},
  );
}

export function ok<D>(data: D, meta?: Record<string, unknown>): { success: true; data: D; meta?: Record<string, unknown> } {
  return meta === undefined ? { success: true, data } : { success: true, data, meta };
}

export interface ErrorBody {
  success: false;
  error: string;
  code: ErrorCode | string;
  details?: Record<string, unknown>;
}

export function errorBody(code: ErrorCode | string, message: string, details?: Record<string, unknown>): ErrorBody {
  return details === undefined ? { success: false, error: message, code } : { success: false, error: message, code, details };
}

/** Response map for OpenAPI: the listed error statuses all use the error envelope. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  const out: Record<number, typeof ErrorEnvelope> = {};
  for (const s of statuses) out[s] = ErrorEnvelope;
  return out;
}
