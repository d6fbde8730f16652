/**
 * The MCP / identity audit's findings (session 4, /tmp/notes/D-audit-mcp.md), each checked through the real
 * server: raw JSON-RPC for protocol-level cases, the SDK's Client for tool behaviour.
 */
import { describe, expect, test } from "bun:test";
import { issueAccessToken } from "../../gateway/oauth/grants.ts";
import { mcpResource } from "../../gateway/oauth/common.ts";
import { MAX_ARGUMENT_DEPTH, MAX_SESSIONS_PER_ADDRESS, type McpGateway } from "../../gateway/mcp/server.ts";
import { ECHO_MAX_CHARS } from "../../gateway/mcp/dispatch.ts";
import { EXTRAS_PLATFORM_RESOLVER } from "../../gateway/mcp/tools/integrations.ts";
import { MAX_JSON_DEPTH } from "../../gateway/plugins/json-depth.ts";
import { ALL_SCOPES, createKey, login } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { accept, connect, DEMO, DEMO_PRODUCT, errorOf, rpc, structured } from "./helpers.ts";

const MERCHANT = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${srv.url}${path}`, { method: "POST", headers: { ...HEADERS, ...headers }, body });
  const text = await res.text();
  let json: any = text;
  try {
    json = JSON.parse(text);
  } catch {
    /* SSE */
  }
  return { status: res.status, headers: res.headers, body: json, text };
}

/** `{"a":{"a":…}}` nested `depth` levels around `leaf`, as text (built without recursion). */
function nested(depth: number, leaf = "1"): string {
  return '{"a":'.repeat(depth) + leaf + "}".repeat(depth);
}

const toolsCall = (name: string, argsJson: string) => `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${argsJson}}}`;

/** A raw session: initialize + notifications/initialized; returns the session id. */
async function openSession(path = `/${DEMO}/mcp`): Promise<string> {
  const init = await fetch(`${srv.url}${path}`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  expect(init.status).toBe(200);
  await init.text();
  const sid = init.headers.get("mcp-session-id")!;
  expect(sid).toBeString();
  const note = await fetch(`${srv.url}${path}`, {
    method: "POST",
    headers: { ...HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  expect(note.status).toBe(202);
  return sid;
}

describe("nesting bound (H1, M1)", () => {
  test("an MCP message nested 20,000 levels deep is refused 400 -32600 validation_error at once, and the gateway stays responsive", async () => {
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":${nested(20_000)}}`;
    const started = performance.now();
    const [r, health] = await Promise.all([post(`/${DEMO}/mcp`, body), fetch(`${srv.url}/api/v1/health`)]);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(health.status).toBe(200);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: -32600, data: { code: "validation_error", maxDepth: MAX_JSON_DEPTH } });
  }, 30_000);

  test("a tool argument nested 50,000 levels deep is the structured INVALID_ARGUMENT naming the field, without the value (was a 500)", async () => {
    const r = await post(`/${DEMO}/mcp`, toolsCall("search_products", `{"query":"lamp","category":${nested(50_000)}}`));
    expect(r.status).toBe(200);
    expect(r.body.result.isError).toBe(true);
    const e = r.body.result.structuredContent.error;
    expect(e).toMatchObject({ code: "INVALID_ARGUMENT", remedy: "fix_arguments", details: { field: "category", maxDepth: MAX_ARGUMENT_DEPTH } });
    expect(e.details.value).toBeUndefined();
    expect(r.text.length).toBeLessThan(2_000);
  }, 30_000);

  test("a nested argument within the bound gets the schema's INVALID_ARGUMENT with the value's type only", async () => {
    const r = await post(`/${DEMO}/mcp`, toolsCall("search_products", `{"query":"lamp","category":${nested(40)}}`));
    const e = r.body.result.structuredContent.error;
    expect(e).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "category", valueType: "object" } });
    expect("value" in e.details).toBe(false);
  });

  test("a long string argument is echoed cut to 100 characters, marked truncated", async () => {
    const c = await connect(srv);
    try {
      const e = errorOf(await c.call("search_products", { query: "x".repeat(600) }));
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.details).toMatchObject({ field: "query", valueType: "string", valueTruncated: true });
      expect(e.details.value).toBe("x".repeat(ECHO_MAX_CHARS));
    } finally {
      await c.close();
    }
  });

  test("search_products counts the query in characters as REST does: 500 emoji are searched, 501 are refused with the 1-to-500 rule", async () => {
    const c = await connect(srv);
    try {
      const fits = await c.call("search_products", { query: "😀".repeat(500) });
      expect(fits.isError).toBeFalsy();
      expect(structured(fits).products).toBeArray();
      const e = errorOf(await c.call("search_products", { query: "😀".repeat(501) }));
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.message).toBe("Invalid argument 'query': must be a string of 1 to 500 characters.");
      expect(e.details).toMatchObject({ field: "query", valueType: "string", valueTruncated: true });
      expect(errorOf(await c.call("search_products", { query: "" })).message).toBe("Invalid argument 'query': must be a string of 1 to 500 characters.");
    } finally {
      await c.close();
    }
    const rest = await srv.json("/api/v1/agent/search", { method: "POST", headers: (await createKey(srv, { scopes: ALL_SCOPES })).headers, body: { query: "😀".repeat(500) } });
    expect(rest.status).toBe(200);
  });

  test("a malformed argument is worded as REST's 400 words it: 'must be a UUID', not TypeBox's 'Expected string to match uuid format' (session 22, helper A)", async () => {
    const c = await connect(srv);
    try {
      const e = errorOf(await c.call("get_product_details", { product_id: "abc" }));
      expect({ code: e.code, message: e.message, field: e.details?.field }).toEqual({ code: "INVALID_ARGUMENT", message: "Invalid argument 'product_id': must be a UUID.", field: "product_id" });
    } finally {
      await c.close();
    }
  });

  test("nlweb_ask counts the question in characters like the search query: 500 emoji pass the argument check, 501 are refused", async () => {
    const c = await connect(srv);
    try {
      const fits = await c.call("nlweb_ask", { question: "😀".repeat(500) });
      expect(fits.isError ? errorOf(fits).code : "ok").toBe("INSUFFICIENT_INPUT"); // emoji hold no searchable words
      const e = errorOf(await c.call("nlweb_ask", { question: "😀".repeat(501) }));
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.message).toBe("Invalid argument 'question': must be a string of 1 to 500 characters.");
    } finally {
      await c.close();
    }
  });

  test("an unknown argument name of 20,000 characters is echoed only up to 100 characters, alone and next to a missing argument", async () => {
    const long = "k".repeat(20_000);
    const shown = `${"k".repeat(ECHO_MAX_CHARS)}…`;
    const c = await connect(srv);
    try {
      const extra = await c.call("search_products", { query: "lamp", [long]: 1 });
      const e = errorOf(extra);
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.message).toBe(`Unknown argument '${shown}'.`);
      expect(e.details.field).toBe(shown);
      expect(JSON.stringify(extra).length).toBeLessThan(3_000);
      const misspelt = await c.call("search_products", { [long]: "lamp" });
      const m = errorOf(misspelt);
      expect(m.code).toBe("MISSING_REQUIRED_ARGUMENT");
      expect(m.details).toMatchObject({ field: "query", unknown: [shown] });
      expect(m.message).toStartWith(`Missing required argument 'query'; unknown argument '${shown}' (this tool takes`);
      expect(JSON.stringify(misspelt).length).toBeLessThan(3_000);
    } finally {
      await c.close();
    }
  });

  test("REST and OAuth JSON bodies nested 20,000 levels deep are 400 validation_error in well under a second", async () => {
    for (const [path, body] of [
      ["/api/v1/auth/login", `{"email":${nested(20_000)},"password":"x"}`],
      ["/api/v1/oauth/register", `{"client_name":${nested(20_000)}}`],
      ["/api/v1/auth/login", `{"email":${nested(100_000)},"password":"x"}`],
    ] as const) {
      const started = performance.now();
      const r = await post(path, body);
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { location: "body", maxDepth: MAX_JSON_DEPTH } });
    }
  }, 30_000);

  test("a body nested exactly to the bound still reaches the route's own validation", async () => {
    const r = await post("/api/v1/auth/login", `{"email":${nested(MAX_JSON_DEPTH - 1)},"password":"x"}`);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
    expect(r.body.details.field).toBe("email");
  });
});

describe("JSON-RPC protocol (H2, N5)", () => {
  test("a batch inside a session is refused 400 -32600 and runs none of its calls", async () => {
    const sid = await openSession();
    const call = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "search_products", arguments: { query: "lamp" } } });
    const r = await post(`/${DEMO}/mcp`, JSON.stringify([call(1), call(2)]), { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe(-32600);
    // the session itself is still usable
    const ping = await post(`/${DEMO}/mcp`, JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }), { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" });
    expect(ping.status).toBe(200);
  });

  test("an object or boolean id, a non-string method and array params are -32600, not answered or taken for a notification", async () => {
    for (const msg of [
      { jsonrpc: "2.0", id: { x: 1 }, method: "ping" },
      { jsonrpc: "2.0", id: true, method: "ping" },
      { jsonrpc: "2.0", id: 1, method: 5 },
      { jsonrpc: "2.0", id: 1, method: "tools/list", params: [1] },
      { jsonrpc: "2.0", id: 1 },
    ]) {
      const r = await post(`/${DEMO}/mcp`, JSON.stringify(msg));
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe(-32600);
      expect(r.body.id).toBeNull();
    }
  });
});

describe("sessions per address (M3)", () => {
  test("an address at its session cap gives up its own oldest session; another address's session is untouched", async () => {
    const gw = srv.running.services.extras.get("mcpGateway") as McpGateway;
    const init = (ip: string) =>
      gw.handle(
        new Request(`${srv.url}/${DEMO}/mcp`, {
          method: "POST",
          headers: HEADERS,
          body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
        }),
        DEMO,
        "main",
        ip,
        { headers: {} },
      );
    const sessionOf = async (ip: string) => {
      const res = (await init(ip)) as Response;
      await res.text();
      return res.headers.get("mcp-session-id")!;
    };
    // each session is pinged from the address that opened it: since d28a61b a keyless session belongs to that address
    const ping = async (sid: string, ip = "198.51.100.7") => {
      const out: { headers: Record<string, string>; status?: number | string } = { headers: {} };
      const r = await gw.handle(
        new Request(`${srv.url}/${DEMO}/mcp`, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) }),
        DEMO,
        "main",
        ip,
        out,
      );
      // the fast path answers a string with its status on `out`; the SDK path a Response
      return r instanceof Response ? r.status : Number(out.status ?? 200);
    };

    const victim = await sessionOf("198.51.100.7");
    const flood: string[] = [];
    for (let i = 0; i <= MAX_SESSIONS_PER_ADDRESS; i++) flood.push(await sessionOf("203.0.113.5"));
    expect(await ping(victim)).toBe(200);
    expect(await ping(flood[0]!, "203.0.113.5")).toBe(404); // the flooder's own oldest session made room
    expect(await ping(flood[flood.length - 1]!, "203.0.113.5")).toBe(200);
  }, 60_000);
});

describe("search and recommendation limits (G4)", () => {
  test("search_products defaults to 20 and serves a limit of 150 as 100 instead of refusing it", async () => {
    const c = await connect(srv);
    try {
      expect(structured(await c.call("search_products", { query: "lamp" })).meta.limit).toBe(20);
      const capped = await c.call("search_products", { query: "lamp", limit: 150 });
      expect(capped.isError).toBeFalsy();
      expect(structured(capped).meta.limit).toBe(100);
      const enriched = await c.call("search_products_enriched", { query: "lamp", limit: 150 });
      expect(structured(enriched).meta.limit).toBe(100);
      expect(errorOf(await c.call("search_products", { query: "lamp", limit: 0 })).code).toBe("INVALID_ARGUMENT");
    } finally {
      await c.close();
    }
  });

  test("get_recommendations serves a limit of 50 as 20", async () => {
    const key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
    const c = await connect(srv, { headers: key.headers });
    try {
      const r = await c.call("get_recommendations", { product_id: DEMO_PRODUCT, limit: 50 });
      expect(r.isError).toBeFalsy();
      expect(structured(r).limit).toBe(20);
    } finally {
      await c.close();
    }
  });
});

describe("payment mandate wording (G3)", () => {
  test("the human is asked for a per-order cap, not a budget", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await connect(srv, { headers: key.headers, elicit: accept });
    try {
      const r = await c.call("issue_payment_mandate", { max_amount: 150, currency: "USD" });
      expect(r.isError).toBeFalsy();
      expect(c.elicitations[0]!.message).toContain("up to 150 USD per order");
    } finally {
      await c.close();
    }
  });
});

describe("a real merchant's checkout endpoint (G2) and audience binding (N11)", () => {
  async function token(opts: { machine: boolean; resource: string; extra?: never }): Promise<string> {
    const session = await login(srv);
    const userId = JSON.parse(Buffer.from(session.split(".")[1]!, "base64url").toString("utf8")).sub as string;
    expect(userId).toBeString();
    return issueAccessToken(srv.running.services, {
      clientId: "mcpc_test",
      userId,
      scopes: ["search", "cart", "checkout"],
      resource: opts.resource,
      ...(opts.machine ? { machine: { authMethod: "client_secret_basic" as const } } : {}),
    });
  }
  const previewAt = (path: string, bearer: string) =>
    rpc(srv, path, "tools/call", { name: "preview_checkout", arguments: { cart_id: crypto.randomUUID() } }, { authorization: `Bearer ${bearer}` });

  test("a user-delegated (authorization_code) token is refused 401 there; a client_credentials token with the trust signal gets through", async () => {
    const svc = srv.running.services;
    const delegated = await token({ machine: false, resource: mcpResource(svc, MERCHANT, "checkout") });
    const refused = await previewAt(`/${MERCHANT}/mcp/checkout`, delegated);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(refused.body.error.data).toMatchObject({ code: "unauthorized", required_grant: "client_credentials" });

    const machine = await token({ machine: true, resource: mcpResource(svc, MERCHANT, "checkout") });
    const ok = await previewAt(`/${MERCHANT}/mcp/checkout`, machine);
    expect(ok.status).toBe(200);
    expect(ok.body.result.structuredContent.error.code).not.toBe("unauthorized"); // a tool answer (unknown cart), not a refusal
    // the same delegated token still works on the store's ordinary endpoint and on the demo store's checkout
    const demoDelegated = await token({ machine: false, resource: mcpResource(svc, DEMO, "checkout") });
    expect((await previewAt(`/${DEMO}/mcp/checkout`, demoDelegated)).status).toBe(200);
  });

  test("a token issued for a dedicated endpoint is refused elsewhere in the store; one for the whole store works everywhere", async () => {
    const svc = srv.running.services;
    const narrow = await token({ machine: true, resource: mcpResource(svc, MERCHANT, "checkout") });
    const atMain = await previewAt(`/${MERCHANT}/mcp`, narrow);
    expect(atMain.status).toBe(401);
    expect(atMain.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const wide = await token({ machine: true, resource: mcpResource(svc, MERCHANT) });
    expect((await previewAt(`/${MERCHANT}/mcp`, wide)).status).toBe(200);
    expect((await previewAt(`/${MERCHANT}/mcp/checkout`, wide)).status).toBe(200);
  });

  test("the client_credentials grant itself issues the trust signal (real token endpoint)", async () => {
    const session = await login(srv);
    const reg = await srv.json("/api/v1/oauth/register", {
      method: "POST",
      headers: { authorization: `Bearer ${session}` },
      body: { client_name: "m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post", scope: "search cart checkout" },
    });
    expect(reg.status).toBe(201);
    const res = await srv.json("/api/v1/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: reg.body.client_id, client_secret: reg.body.client_secret, resource: `${srv.url}/${MERCHANT}/mcp/checkout`, scope: "search cart checkout" }).toString(),
    });
    expect(res.status).toBe(200);
    const claims = JSON.parse(Buffer.from(String(res.body.access_token).split(".")[1]!, "base64url").toString("utf8"));
    expect(claims).toMatchObject({ gty: "client_credentials", agent_trust: { v: 1, client_auth: "client_secret_post", accountable_owner: true } });
    expect((await previewAt(`/${MERCHANT}/mcp/checkout`, res.body.access_token)).status).toBe(200);
  });
});

describe("confirmation (N4, N10)", () => {
  test("repeating complete_checkout on a completed session answers at once without asking the human to pay again", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
    const c = await connect(srv, { headers: key.headers, elicit: accept });
    try {
      const cart = structured(await c.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
      const preview = structured(await c.call("preview_checkout", { cart_id: cart.cart_id }));
      const args = { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" };
      const done = structured(await c.call("complete_checkout", args));
      expect(done.status).toBe("COMPLETED");
      const asked = c.elicitations.length;
      const same = errorOf(await c.call("complete_checkout", args));
      expect(same.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
      expect(JSON.stringify(same.details)).toContain(done.order_id);
      const other = errorOf(await c.call("complete_checkout", { ...args, idempotency_key: crypto.randomUUID() }));
      expect(other.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
      expect(c.elicitations.length).toBe(asked);
    } finally {
      await c.close();
    }
  }, 60_000);

  test("an elicitation the client fails is a retryable UPSTREAM_UNAVAILABLE, not the human's decline", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
    const c = await connect(srv, {
      headers: key.headers,
      elicit: () => {
        throw new Error("the confirmation dialog could not be shown");
      },
    });
    try {
      const e = errorOf(await c.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
      expect(e).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true, remedy: "retry_with_backoff", details: { reason: "confirmation_not_completed" } });
      expect(c.elicitations.length).toBe(1);
    } finally {
      await c.close();
    }
  }, 60_000);
});

describe("dynamic client registration bounds (N6)", () => {
  const register = (body: unknown) => srv.json("/api/v1/oauth/register", { method: "POST", body });

  test("more than 10 redirect URIs, an over-long one or an over-long scope is invalid_client_metadata, and nothing is stored", async () => {
    const before = (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n;
    const many = Array.from({ length: 11 }, (_, i) => `https://agent.example/cb/${i}`);
    for (const body of [
      { client_name: "x", redirect_uris: many, token_endpoint_auth_method: "none" },
      { client_name: "x", redirect_uris: [`https://agent.example/${"a".repeat(2_001)}`], token_endpoint_auth_method: "none" },
      { client_name: "x", redirect_uris: ["https://agent.example/cb"], token_endpoint_auth_method: "none", scope: "search ".repeat(100) },
      { client_name: "x", redirect_uris: ["https://agent.example/cb"], token_endpoint_auth_method: "none", grant_types: Array(11).fill("authorization_code") },
    ]) {
      const r = await register(body);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe("invalid_client_metadata");
    }
    expect((await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n).toBe(before);
  });

  test("10 redirect URIs are accepted, duplicates stored once", async () => {
    const ten = Array.from({ length: 10 }, (_, i) => `https://agent.example/cb/${i % 5}`);
    const r = await register({ client_name: "x", redirect_uris: ten, token_endpoint_auth_method: "none" });
    expect(r.status).toBe(201);
    expect(r.body.redirect_uris).toHaveLength(5);
  });
});

describe("codes from the spec's tool-error table (N1)", () => {
  test("get_wallet without a wallet is PRECONDITION_NOT_MET naming provision_wallet; a second provision_wallet is NOT_ELIGIBLE before anyone is asked", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
    const c = await connect(srv, { headers: key.headers, elicit: accept });
    try {
      const none = errorOf(await c.call("get_wallet"));
      expect(none).toMatchObject({ code: "PRECONDITION_NOT_MET", details: { required_step: "provision_wallet" } });
      const made = structured(await c.call("provision_wallet", {}));
      expect(made.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
      const asked = c.elicitations.length;
      const again = errorOf(await c.call("provision_wallet", {}));
      expect(again).toMatchObject({ code: "NOT_ELIGIBLE", details: { reason: "wallet_exists", address: made.address } });
      expect(c.elicitations.length).toBe(asked);
      expect(structured(await c.call("get_wallet")).address).toBe(made.address);
    } finally {
      await c.close();
    }
  }, 60_000);
});

describe("merchant platform calls connect to the vetted address", () => {
  test("check_live_availability resolves the platform's name once, through the SSRF guard, and connects to that address with the original Host", async () => {
    const hosts: string[] = [];
    const platform = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => {
        hosts.push(req.headers.get("host") ?? "");
        return Response.json({ in_stock: true, quantity: 7 });
      },
    });
    const svc = srv.running.services;
    const lookups: string[] = [];
    // "platform.invalid" has no DNS answer: only a connection to the vetted address can reach the platform
    svc.extras.set(EXTRAS_PLATFORM_RESOLVER, async (host: string) => {
      lookups.push(host);
      return host === "platform.invalid" ? [{ address: "127.0.0.1", family: 4 }] : [];
    });
    const [before] = await srv.db.sql<{ attributes: Record<string, unknown> }[]>`SELECT attributes FROM products WHERE id = ${DEMO_PRODUCT}`;
    await srv.db.sql`UPDATE products SET attributes = attributes || ${srv.db.sql.json({ platform_endpoint: `http://platform.invalid:${platform.port}/items/1` })} WHERE id = ${DEMO_PRODUCT}`;
    const c = await connect(srv);
    try {
      const r = await c.call("check_live_availability", { product_id: DEMO_PRODUCT });
      expect(r.isError).toBeFalsy();
      expect(structured(r)).toMatchObject({ inStock: true, quantity: 7 });
      expect(lookups).toEqual(["platform.invalid"]);
      expect(hosts).toEqual([`platform.invalid:${platform.port}`]);
    } finally {
      await c.close();
      svc.extras.delete(EXTRAS_PLATFORM_RESOLVER);
      await srv.db.sql`UPDATE products SET attributes = ${srv.db.sql.json(before!.attributes as never)} WHERE id = ${DEMO_PRODUCT}`;
      platform.stop(true);
    }
  });
});
