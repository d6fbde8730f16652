/**
 * requestHash is stored with every bridge Idempotency-Key record: a change in its output turns a same-key retry
 * across a deploy into 409 IDEMPOTENCY_KEY_CONFLICT. These hashes were taken from the code before its object check
 * was shared with the MCP server (gateway/plugins/json-body.ts `isObjectRecord`); they must never change.
 */
import { describe, expect, test } from "bun:test";
import { requestHash } from "../../gateway/bridge/common.ts";

class Thing {
  a = 1;
}
class Empty {}

const ACP = "/api/v1/agent/acp/checkout_sessions";
const NONE = "968170942c14640c7873cdfe4e752f80293205267d145845f9f536560b715d63";
const OBJECT_WITHOUT_KEYS_AT_X = "b74e2ed619dbaf80665ab6cea7cb47f41563281c3b6eb027d83943ea2b2217eb";

const PINNED: [string, string, string, unknown, string][] = [
  ["no body", "POST", ACP, undefined, NONE],
  ["null", "POST", ACP, null, NONE],
  ["{}", "POST", ACP, {}, NONE],
  ["a null-prototype {}", "POST", ACP, Object.create(null), NONE],
  ["[]", "POST", ACP, [], "7826ab874155b7c216a7d274a80b54dfdac3d12a4db3738220cd604e7c664d98"],
  [
    "a nested body",
    "POST",
    "/api/v1/agent/ucp/checkout-sessions",
    { line_items: [{ item: { id: "6f1c0a3e-2b4d-4e5f-8a6b-7c8d9e0f1a2b" }, quantity: 2 }], buyer: { email: "a@b.example" } },
    "c03d630f6127818628b87570a42cc66c1129c63a1c5f91cc746e926f60f9f928",
  ],
  [
    "unicode and numbers",
    "PUT",
    `${ACP}/cs_1`,
    { note: "café ☕ \u0000", n: -0, big: 1e21, f: 0.1 },
    "768e49584c67d2c50b4107c828ca3182deccc99deed24d87eaa532f088add8ae",
  ],
  ["an undefined member", "POST", "/x", { a: undefined }, "f60b159e9f5bdf85c362e0743f2bed80ef62268d825993766eecd73ca413029e"],
  ["a string", "POST", "/x", "text", "5946e43b59c1867f0aa49a4120141f95c9d5c2e5c20a924e644f52bec52d5863"],
  ["a number", "POST", "/x", 42, "31752457a7463253b53489dd93521d2e910837d1ebec1d058b4cd5ca85be4194"],
  // not JSON bodies, but the rule was "any non-array object without own keys is no body": kept to the letter
  ["a Date", "POST", "/x", new Date(0), OBJECT_WITHOUT_KEYS_AT_X],
  ["a Map", "POST", "/x", new Map([["k", 1]]), OBJECT_WITHOUT_KEYS_AT_X],
  ["an empty class instance", "POST", "/x", new Empty(), OBJECT_WITHOUT_KEYS_AT_X],
  ["a class instance", "POST", "/x", new Thing(), "0ad22217ed1b4855c6410c1558fa7547161925e1e539a998e3bddb7d4f37fb11"],
];

describe("requestHash output is pinned", () => {
  test("every input hashes exactly as the stored idempotency records did", () => {
    for (const [name, method, path, body, hash] of PINNED) expect({ name, hash: requestHash(method, path, body) }).toEqual({ name, hash });
  });
});
