/**
 * A merchant route's `{slug}` that cannot be a store's (upper case, over 63 characters) is 400 validation_error naming
 * `slug`, the path value's house answer, and a well-formed slug of no store (or of another owner's store) is 404
 * store_not_found (docs/catalog.md; helper B, session 22, found the docs saying 404 for both). One pattern serves every
 * route (actors/store/slug.ts).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let admin: Record<string, string>;

beforeAll(async () => {
  admin = { authorization: `Bearer ${await login(srv)}` };
}, 120_000);

const inventory = (slug: string) =>
  srv.json(`/api/v1/merchant/stores/${slug}/inventory`, { method: "PATCH", headers: admin, body: { items: [{ externalId: "x", stockQuantity: 1 }] } });

describe("a merchant route's slug", () => {
  test("in upper case, or of 64 characters, is 400 validation_error on the path's slug", async () => {
    for (const slug of ["Demo-Store", "a".repeat(64)]) {
      const r = await inventory(slug);
      expect({ status: r.status, code: r.body.code, location: r.body.details?.location, field: r.body.details?.field }).toEqual({
        status: 400,
        code: "validation_error",
        location: "params",
        field: "slug",
      });
    }
  });

  test("well formed but of no store is 404 store_not_found", async () => {
    const r = await inventory("no-such-store-here");
    expect({ status: r.status, code: r.body.code }).toEqual({ status: 404, code: "store_not_found" });
  });
});
