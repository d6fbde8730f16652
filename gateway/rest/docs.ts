/** GET /api/v1/agent/docs → 302 to the OpenAPI document (spec: no authentication). */
import { Elysia } from "elysia";

export function docsRoutes() {
  return new Elysia({ name: "agent-docs" }).get(
    "/api/v1/agent/docs",
    ({ redirect }) => redirect("/api/v1/openapi.json", 302),
    { detail: { tags: ["operations"], summary: "Redirect to the OpenAPI document" } },
  );
}
