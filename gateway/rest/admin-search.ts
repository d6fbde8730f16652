/**
 * Operator search tuning: GET/PUT /api/v1/admin/search/settings (one settings object, applied alike to the
 * embedded engine and to Meilisearch's index settings) and POST /api/v1/admin/search/reindex.
 * PUT takes a partial patch over the stored settings; an invalid result is 400 validation_error.
 */
import { Elysia, t } from "elysia";
import { getSearchService } from "../../search/service.ts";
import type { SearchSettingsPatch } from "../../search/settings.ts";
import { errorResponses, ok } from "../envelope.ts";
import { requireOperator, userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";

const sec = [{ bearer: [] }];

export function adminSearchRoutes(svc: Services) {
  return new Elysia({ name: "admin-search-routes" })
    .use(userAuth(svc))
    .get(
      "/api/v1/admin/search/settings",
      async ({ user }) => {
        requireOperator(user);
        const s = getSearchService(svc);
        return ok({ settings: s.settings, version: s.settingsVersion, engine: s.engine.name, documents: await s.engine.count() });
      },
      { response: errorResponses(401, 403), detail: { tags: ["admin"], summary: "Current search settings", security: sec } },
    )
    .put(
      "/api/v1/admin/search/settings",
      async ({ user, body }) => {
        requireOperator(user);
        const s = getSearchService(svc);
        const r = await s.updateSettings(svc.sql, body as SearchSettingsPatch, user.id);
        return ok({ settings: r.settings, version: r.version, engine: s.engine.name, reindexed: r.reindexed });
      },
      {
        body: t.Record(t.String(), t.Unknown(), { description: "A partial SearchSettings (see docs/search.md)" }),
        response: errorResponses(400, 401, 403),
        detail: { tags: ["admin"], summary: "Change search settings (partial patch)", security: sec },
      },
    )
    .post(
      "/api/v1/admin/search/reindex",
      async ({ user }) => {
        requireOperator(user);
        return ok(await getSearchService(svc).reindex(svc.sql));
      },
      { response: errorResponses(401, 403), detail: { tags: ["admin"], summary: "Rebuild the search index from the database", security: sec } },
    );
}
