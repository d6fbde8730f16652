/**
 * The served OpenAPI document is one JSON Schema resource set: a route that is not (yet) in gateway/openapi/operations.ts
 * keeps the error schemas Elysia generated from `errorResponses`, and TypeBox's ErrorEnvelope carries
 * `$id: "#/components/schemas/ErrorEnvelope"`, so two such responses made the same `$id` name two schemas and a JSON
 * Schema validator refused the whole document (ajv: "resolves to more than one schema"; found by the OpenAPI fuzz test
 * once routes with two such responses were added). The completed document carries no `$id`.
 */
import { describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { ErrorEnvelope } from "../../gateway/envelope.ts";
import { completeDocument } from "../../gateway/openapi/complete.ts";

describe("the completed OpenAPI document", () => {
  test("carries no $id, so two undocumented routes' error responses do not make the document unreadable to a validator", () => {
    const envelope = JSON.parse(JSON.stringify(ErrorEnvelope));
    expect(envelope.$id).toBe("#/components/schemas/ErrorEnvelope");
    const response = { description: "x", content: { "application/json": { schema: envelope } } };
    const generated = {
      openapi: "3.0.3",
      info: { title: "t", version: "1" },
      paths: {
        "/api/v1/zz-undocumented/{id}": {
          delete: { responses: { 200: { description: "ok" }, 404: structuredClone(response), 409: structuredClone(response) } },
        },
      },
      components: { schemas: {} },
    };
    const doc = completeDocument(generated as unknown as Parameters<typeof completeDocument>[0]);
    expect(JSON.stringify(doc)).not.toContain('"$id"');
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(doc as object, "doc");
    const validate = ajv.getSchema("doc#/paths/~1api~1v1~1zz-undocumented~1{id}/delete/responses/404/content/application~1json/schema");
    expect(validate?.({ success: false, error: "x", code: "not_found" })).toBe(true);
  });
});
