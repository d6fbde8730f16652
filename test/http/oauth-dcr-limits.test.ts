/**
 * Anonymous OAuth client registration cannot fill the disk (audit W-1): 20 stored registrations per hour per client
 * address (actors/agent/limits.ts OAUTH_REGISTER_PER_IP, a durable bucket of the address's ip actor), and at most
 * 4 KiB of redirect URIs and a 200-character name per client (gateway/oauth/register.ts DCR_LIMITS), refused with
 * RFC 7591's invalid_client_metadata rather than cut. Real MCP clients' registrations still fit.
 *
 * Requests come from 127.0.0.x source addresses (node:http `localAddress`), so each test has an address of its own.
 */
import { describe, expect, test } from "bun:test";
import http from "node:http";
import { useServer } from "../helpers/server.ts";

const srv = useServer();

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** POST /api/v1/oauth/register with a JSON body, from the given loopback source address. */
function registerFrom(from: string, metadata: unknown): Promise<Answer> {
  const url = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: Number(url.port), path: "/api/v1/oauth/register", method: "POST", headers: { "content-type": "application/json" }, localAddress: from },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(metadata));
  });
}

const client = (i: number) => ({ client_name: `Agent ${i}`, redirect_uris: [`http://127.0.0.1:9/cb/${i}`], token_endpoint_auth_method: "none" });

async function storedClients(): Promise<number> {
  return (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n;
}

describe("registrations per address", () => {
  test("the 21st registration from one address within the hour is 429 rate_limit_exceeded with the bucket's headers and stores nothing; refused metadata is not counted", async () => {
    const from = "127.0.0.21";
    // metadata refused before anything is stored costs the global bucket only
    for (let i = 0; i < 3; i++) expect((await registerFrom(from, { client_name: "x".repeat(201), redirect_uris: ["http://127.0.0.1:9/cb"] })).status).toBe(400);
    for (let i = 0; i < 20; i++) {
      const r = await registerFrom(from, client(i));
      expect(r.status).toBe(201);
      // the tightest bucket is shown: this one (20/hour), not the global 500 / 15 min
      expect(r.headers["x-ratelimit-limit"]).toBe("20");
      expect(r.headers["x-ratelimit-remaining"]).toBe(String(19 - i));
    }
    const before = await storedClients();
    const refused = await registerFrom(from, client(20));
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ success: false, code: "rate_limit_exceeded" });
    expect(refused.headers["x-ratelimit-limit"]).toBe("20");
    expect(refused.headers["x-ratelimit-remaining"]).toBe("0");
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(3_500);
    expect(retryAfter).toBeLessThanOrEqual(3_600);
    expect(Number(refused.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000 + 3_500);
    expect(await storedClients()).toBe(before);
  }, 30_000);

  test("another address still registers while one address is refused", async () => {
    const from = "127.0.0.22";
    for (let i = 0; i < 20; i++) expect((await registerFrom(from, client(i))).status).toBe(201);
    expect((await registerFrom(from, client(20))).status).toBe(429);
    const other = await registerFrom("127.0.0.23", client(0));
    expect(other.status).toBe(201);
    expect(other.headers["x-ratelimit-remaining"]).toBe("19");
  }, 30_000);

  test("the count is written before the answer, as a durable row of the address's ip actor with a one-hour window", async () => {
    const from = "127.0.0.24";
    for (let i = 0; i < 3; i++) expect((await registerFrom(from, client(i))).status).toBe(201);
    const rows = await srv.db.sql<{ used: number; durable: boolean; span: string }[]>`
      SELECT used, durable, (window_end - window_start)::text AS span FROM rate_limit_buckets
      WHERE owner = ${`ip/${from}`} AND bucket_id = ${`ip:${from}:oauth-register`}`;
    expect([...rows]).toEqual([{ used: 3, durable: true, span: String(60 * 60_000) }]);
  });
});

describe("metadata size", () => {
  const uri = (tail: string) => `https://agent.example/cb/${tail}`;

  test("redirect URIs over 4 KiB together are 400 invalid_client_metadata, counted in UTF-8 bytes, and nothing is stored", async () => {
    const before = await storedClients();
    // three URIs of about 1,400 characters each: every one within the 2,000 a URI may have
    const long = await registerFrom("127.0.0.31", { client_name: "x", redirect_uris: ["a", "b", "c"].map((t) => uri(t.repeat(1_375))), token_endpoint_auth_method: "none" });
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ success: false, error: "invalid_client_metadata", code: "invalid_client_metadata" });
    expect(long.body.error_description).toBe("redirect_uris may be at most 4096 bytes together");
    // 2 × 1,126 characters, but é is two bytes in UTF-8: 4,452 bytes
    const wide = await registerFrom("127.0.0.31", { client_name: "x", redirect_uris: ["1", "2"].map((t) => uri(t + "é".repeat(1_100))), token_endpoint_auth_method: "none" });
    expect(wide.status).toBe(400);
    expect(wide.body.error).toBe("invalid_client_metadata");
    expect(await storedClients()).toBe(before);
  });

  test("4 KiB of redirect URIs exactly is accepted", async () => {
    const base = uri("").length;
    const four = ["a", "b", "c", "d"].map((t) => uri(t.repeat(1_024 - base)));
    expect(four.reduce((n, u) => n + Buffer.byteLength(u), 0)).toBe(4_096);
    const r = await registerFrom("127.0.0.32", { client_name: "x", redirect_uris: four, token_endpoint_auth_method: "none" });
    expect(r.status).toBe(201);
    expect(r.body.redirect_uris).toEqual(four);
  });

  test("a client_name over 200 characters is 400 invalid_client_metadata (not cut), 200 characters are kept whole", async () => {
    const long = await registerFrom("127.0.0.33", { client_name: "n".repeat(201), redirect_uris: [uri("n")], token_endpoint_auth_method: "none" });
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ error: "invalid_client_metadata", error_description: "client_name may be at most 200 characters" });
    // characters, not UTF-16 units: 200 emoji are 200 characters (as the column's check counts them)
    const name = "🤖".repeat(200);
    const ok = await registerFrom("127.0.0.33", { client_name: name, redirect_uris: [uri("n")], token_endpoint_auth_method: "none" });
    expect(ok.status).toBe(201);
    expect(ok.body.client_name).toBe(name);
    const notString = await registerFrom("127.0.0.33", { client_name: 42, redirect_uris: [uri("n")], token_endpoint_auth_method: "none" });
    expect(notString.status).toBe(400);
    expect(notString.body.error).toBe("invalid_client_metadata");
  });

  test("what MCP clients in the wild register still fits: the SDK's loopback callback, a web app's callback, an editor's two", async () => {
    const registrations = [
      // @modelcontextprotocol/sdk's client (OAuthClientMetadata from its OAuthClientProvider)
      {
        client_name: "MCP Client",
        redirect_uris: ["http://localhost:8090/callback"],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        client_uri: "https://github.com/modelcontextprotocol/typescript-sdk",
      },
      { client_name: "Claude", redirect_uris: ["https://claude.ai/api/mcp/auth_callback"], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" },
      { client_name: "Visual Studio Code", redirect_uris: ["http://127.0.0.1:33418", "https://vscode.dev/redirect"], grant_types: ["authorization_code", "refresh_token"], token_endpoint_auth_method: "none" },
    ];
    for (const m of registrations) {
      const r = await registerFrom("127.0.0.34", m);
      expect(r.status).toBe(201);
      expect(r.body.redirect_uris).toEqual(m.redirect_uris);
    }
  });
});
