/**
 * Every response carries X-Request-Id: the caller's own (when it is a sane token) or a fresh one.
 * Set in onRequest so 404s and early refusals carry it too; routes read it back from `requestId`.
 */
import { Elysia } from "elysia";

const SANE = /^[A-Za-z0-9._:-]{8,128}$/;

export const requestId = new Elysia({ name: "request-id" })
  .onRequest(({ request, set }) => {
    const incoming = request.headers.get("x-request-id");
    set.headers["x-request-id"] = incoming && SANE.test(incoming) ? incoming : crypto.randomUUID();
  })
  .derive({ as: "global" }, ({ set }) => ({ requestId: String(set.headers["x-request-id"]) }));
