/**
 * Operator search tuning: GET/PUT /api/v1/admin/search/settings (one settings object, applied alike to the
 * embedded engine and to Meilisearch's index settings) and POST /api/v1/admin/search/reindex.
 * PUT takes a partial patch over the stored settings (strict: an unknown key at any level is 400 naming it); an
 * invalid result is 400 validation_error. Concurrent PUTs are serialised in the database; GET and PUT answer an
 * ETag (the version) and a PUT with If-Match is refused 409 `conflict` when another version was stored since.
 */
import { Elysia } from "elysia";
import { getSearchService } from "../../search/service.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { unstorableField } from "../../actors/store/ingest.ts";
import { SearchSettingsPatchSchema, type SearchSettingsPatch } from "../../search/settings.ts";
import { errorResponses, ok } from "../envelope.ts";
import { requireOperator, userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { strictJsonBody } from "./strict-body.ts";
import { noBody } from "./optional-body.ts";

const sec = [{ bearer: [] }];

const etagOf = (version: number) => `"${version}"`;

/**
 * Refuses text Postgres cannot store (a NUL byte, a lone UTF-16 surrogate) in a stop word, a synonym or a synonym
 * key, naming it (`stopWords.0`, `synonyms.tv.0`) as the merchant routes do (`unstorableField`): it reached the
 * jsonb write and came back as the database's field-less 400 (audit W-3). Runs after the operator check.
 */
export function refuseUnstorableSettings(patch: unknown): void {
  const bad = unstorableField(patch);
  if (bad) throw fail("validation_error", `Invalid ${bad.field}: ${bad.message}`, { location: "body", field: bad.field });
}

/**
 * The version an If-Match names, or undefined when there is none (or `*`: the settings always exist). Our ETags
 * are strong `"<version>"`; a weak one names the same version. Anything else is a 400 naming the header.
 */
export function ifMatchVersion(header: string | null): number | undefined {
  if (header === null || header.trim() === "*") return undefined;
  const m = /^\s*(?:W\/)?"(\d{1,9})"\s*$/.exec(header);
  if (!m) {
    throw fail("validation_error", `Invalid headers field 'if-match': must be an ETag of these settings such as "3" (got ${JSON.stringify(header.slice(0, 100))})`, {
      location: "headers",
      field: "if-match",
    });
  }
  return Number(m[1]);
}

export function adminSearchRoutes(svc: Services) {
  return new Elysia({ name: "admin-search-routes" })
    .use(userAuth(svc))
    .get(
      "/api/v1/admin/search/settings",
      async ({ user, set }) => {
        requireOperator(user);
        const s = getSearchService(svc);
        set.headers.etag = etagOf(s.settingsVersion);
        return ok({ settings: s.settings, version: s.settingsVersion, engine: s.engine.name, documents: await s.engine.count() });
      },
      { response: errorResponses(401, 403), detail: { tags: ["admin"], summary: "Current search settings", security: sec } },
    )
    .put(
      "/api/v1/admin/search/settings",
      async ({ user, body, request, set }) => {
        requireOperator(user);
        refuseUnstorableSettings(body);
        const ifVersion = ifMatchVersion(request.headers.get("if-match"));
        const s = getSearchService(svc);
        const r = await s.updateSettings(svc.sql, body as SearchSettingsPatch, user.id, ifVersion);
        set.headers.etag = etagOf(r.version);
        return ok({ settings: r.settings, version: r.version, engine: s.engine.name, reindexed: r.reindexed });
      },
      {
        // a key the settings do not have, at any level, is 400 naming it (audit U MED-4; the normaliser would drop it)
        ...strictJsonBody(SearchSettingsPatchSchema),
        response: errorResponses(400, 401, 403, 409),
        detail: {
          tags: ["admin"],
          summary: "Change search settings (partial patch)",
          description:
            "Unknown keys at any level are 400 naming them; rankingWeights may not all be 0. Send If-Match with the ETag of a GET to make the change conditional (409 conflict when another change was stored since).",
          security: sec,
        },
      },
    )
    .post(
      "/api/v1/admin/search/reindex",
      async ({ user }) => {
        requireOperator(user);
        return ok(await getSearchService(svc).reindex(svc.sql));
      },
      { ...noBody(), response: errorResponses(400, 401, 403), detail: { tags: ["admin"], summary: "Rebuild the search index from the database", security: sec } },
    );
}
