/**
 * The pure parts of the /api/v1 request contract: the body-number rewrite, the repeated-query scan, the JSON
 * content-type test and the secret-field rule (the HTTP behaviour is in test/http/request-contract.test.ts).
 */
import { describe, expect, test } from "bun:test";
import { OptionalKind } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { t } from "elysia";
import { findRouteRule } from "../../actors/agent/access.ts";
import { isJsonContentType, normalizeJsonContentType, repeatedQueryParameter } from "../../gateway/plugins/json-body.ts";
import { withJsonNumbers } from "../../gateway/plugins/json-numbers.ts";
import { isSecretField, validationAnswer } from "../../infra/validation-message.ts";
import { ValueErrorType } from "@sinclair/typebox/errors";

describe("withJsonNumbers", () => {
  const body = t.Object({
    amount: t.Optional(t.Integer({ minimum: 1 })),
    items: t.Array(t.Object({ quantity: t.Integer({ minimum: 1, maximum: 10 }) })),
    ratio: t.Numeric(),
    name: t.String(),
  });
  const strict = TypeCompiler.Compile(withJsonNumbers(body as never));

  test("a numeric string is refused where Elysia's integer took it, a number still passes", () => {
    expect(strict.Check({ items: [{ quantity: 2 }], ratio: 0.5, name: "x" })).toBe(true);
    expect(strict.Check({ items: [{ quantity: "2" }], ratio: 0.5, name: "x" })).toBe(false);
    expect(strict.Check({ amount: "0x10", items: [], ratio: 0.5, name: "x" })).toBe(false);
    expect(strict.Check({ items: [], ratio: "0.5", name: "x" })).toBe(false);
  });

  test("an optional field stays optional, bounds stay, and the original schema is not changed", () => {
    const rewritten = withJsonNumbers(body as never) as unknown as { properties: Record<string, Record<symbol | string, unknown>> };
    expect(rewritten.properties.amount![OptionalKind]).toBe("Optional");
    expect(rewritten.properties.amount!.type).toBe("integer");
    expect(strict.Check({ items: [{ quantity: 11 }], ratio: 1, name: "x" })).toBe(false);
    expect(TypeCompiler.Compile(body).Check({ items: [{ quantity: "2" }], ratio: "1", name: "x" })).toBe(true);
  });

  test("a schema without such unions is returned as it is", () => {
    const plain = t.Object({ a: t.Number(), b: t.Array(t.String()) });
    expect(withJsonNumbers(plain as never)).toBe(plain as never);
  });
});

describe("repeatedQueryParameter", () => {
  const at = (url: string) => repeatedQueryParameter(url, url.indexOf("?"));
  test("finds a key given twice, compared decoded; ignores distinct keys and the fragment", () => {
    expect(at("http://h/p?days=45&days=30")).toBe("days");
    expect(at("http://h/p?d%61ys=45&days=30")).toBe("days");
    expect(at("http://h/p?a=1&b=2&c")).toBeUndefined();
    expect(at("http://h/p?a=1#a=2")).toBeUndefined();
    expect(at("http://h/p?a")).toBeUndefined();
    expect(at("http://h/p?a&a")).toBe("a");
  });
});

describe("JSON content types", () => {
  test("application/json and +json with parameters are JSON; forms, text and lookalikes are not", () => {
    for (const ok of ["application/json", "Application/JSON; charset=utf-8", "application/merge-patch+json"]) expect(isJsonContentType(ok)).toBe(true);
    for (const no of [null, "", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"]) expect(isJsonContentType(no)).toBe(false);
  });

  const typeAfter = (type: string) => {
    const request = new Request("http://x/api/v1/agent/cart", { method: "POST", headers: { "content-type": type }, body: "{}" });
    normalizeJsonContentType(request);
    return request.headers.get("content-type");
  };

  test("a JSON type Elysia's parser would not recognise becomes application/json (review R3-5)", () => {
    for (const type of ["Application/JSON", "APPLICATION/json", "application/JSON; charset=utf-8", "application/vnd.api+json", "application/merge-patch+json; charset=utf-8"]) {
      expect(typeAfter(type)).toBe("application/json");
    }
  });

  test("application/json as sent, and types that are not JSON, are left as they are", () => {
    for (const type of ["application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "application/xml"]) {
      expect(typeAfter(type)).toBe(type);
    }
  });
});

describe("secret fields in validation messages", () => {
  test("password, client_secret, refresh_token, key and nested paths are secret; query and limit are not", () => {
    for (const f of ["password", "client_secret", "refresh_token", "key", "auth.password", "api_key"]) expect(isSecretField(f)).toBe(true);
    for (const f of ["query", "limit", "items.0.quantity", "keyId"]) expect(isSecretField(f)).toBe(false);
  });

  test("the 400 of a secret field says the kind and length of its value, never the value", () => {
    const a = validationAnswer("body", "password", { type: ValueErrorType.StringMaxLength, value: "hunter2".repeat(3), schema: { type: "string", maxLength: 10 } });
    expect(a.message).toBe("Invalid body field 'password': must be a string of at most 10 characters (got a string of 21 characters, not shown)");
    expect(JSON.stringify(a)).not.toContain("hunter2");
  });
});

describe("HEAD in the route access table", () => {
  test("HEAD finds the GET rule, and only where a GET rule exists", () => {
    expect(findRouteRule("HEAD", "/api/v1/agent/products/x")).toBe(findRouteRule("GET", "/api/v1/agent/products/x"));
    expect(findRouteRule("HEAD", "/api/v1/agent/search")).toBeUndefined();
  });
});
