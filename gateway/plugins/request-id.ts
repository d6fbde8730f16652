/**
 * Every response carries X-Request-Id: the caller's own (when it is a sane token) or a fresh one.
 * Applied by the edge hook (gateway/plugins/edge.ts) so 404s and early refusals carry it too.
 */
const SANE = /^[A-Za-z0-9._:-]{8,128}$/;

export function assignRequestId(request: Request, headers: Record<string, string | number>): void {
  const incoming = request.headers.get("x-request-id");
  headers["x-request-id"] = incoming && SANE.test(incoming) ? incoming : crypto.randomUUID();
}
