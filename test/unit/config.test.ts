import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { CONFIG_VARS, ConfigError, MAX_TIMER_MS, checkRoleConfig, loadConfig } from "../../infra/config.ts";

describe("configuration", () => {
  test("production never seeds the demo merchants, whose accounts share a published password (audit M-5)", () => {
    expect(loadConfig({ NODE_ENV: "production" }).SEED_DEMO).toBe(false);
    expect(loadConfig({ NODE_ENV: "production", SEED_DEMO: "false" }).SEED_DEMO).toBe(false);
    expect(() => loadConfig({ NODE_ENV: "production", SEED_DEMO: "true" })).toThrow(/SEED_DEMO/);
    expect(loadConfig({}).SEED_DEMO).toBe(true);
  });
  test("SITE_URL loses its trailing slashes, so links built from it never hold a double slash (audit B-6)", () => {
    expect(loadConfig({ SITE_URL: "https://shop.example/" }).SITE_URL).toBe("https://shop.example");
    expect(loadConfig({ SITE_URL: "https://shop.example//" }).SITE_URL).toBe("https://shop.example");
    expect(loadConfig({ SITE_URL: "https://shop.example" }).SITE_URL).toBe("https://shop.example");
  });
  test("an empty environment gives the embedded defaults", () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(3000);
    expect(c.DATABASE_URL).toBe("");
    expect(c.TRUST_SCORE_PUBLIC_V41_ENABLED).toBe(true);
    expect(c.SPEC005_KYAI_GATE_MODE).toBe("observe");
  });

  test("values are coerced from strings", () => {
    const c = loadConfig({ PORT: "8080", RATE_LIMITS_ENABLED: "false", SPEC005_KYAI_GATE_MODE: "enforce" });
    expect(c.PORT).toBe(8080);
    expect(c.RATE_LIMITS_ENABLED).toBe(false);
    expect(c.SPEC005_KYAI_GATE_MODE).toBe("enforce");
  });

  test("a bad value stops with one line naming the variable and what is allowed", () => {
    const cases: [Record<string, string>, string, string][] = [
      [{ PORT: "eighty" }, "PORT", "integer from 0 to 65535"],
      [{ PORT: "70000" }, "PORT", "integer"],
      [{ SPEC005_KYAI_GATE_MODE: "block" }, "SPEC005_KYAI_GATE_MODE", "observe | enforce"],
      [{ DATABASE_URL: "mysql://x" }, "DATABASE_URL", "postgres"],
      [{ RATE_LIMITS_ENABLED: "maybe" }, "RATE_LIMITS_ENABLED", "true | false"],
      [{ NODE_ENV: "staging" }, "NODE_ENV", "development | test | production"],
    ];
    for (const [env, variable, allowed] of cases) {
      let err: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const msg = (err as Error).message;
      expect(msg).toContain(variable);
      expect(msg).toContain(allowed);
      expect(msg.includes("\n")).toBe(false);
    }
  });

  test("a retention interval longer than a timer can hold (2^31 - 1 ms) is refused at start-up, since the timer would fire every millisecond", () => {
    expect(loadConfig({ RETENTION_INTERVAL_MS: "2147483647" }).RETENTION_INTERVAL_MS).toBe(2_147_483_647);
    expect(loadConfig({ RETENTION_INTERVAL_MS: "0" }).RETENTION_INTERVAL_MS).toBe(0);
    let err: unknown;
    try {
      loadConfig({ RETENTION_INTERVAL_MS: "2592000000" }); // "monthly"
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe("RETENTION_INTERVAL_MS");
    expect((err as Error).message).toBe('config: RETENTION_INTERVAL_MS="2592000000" is invalid; allowed: an integer from 0 to 2147483647');
  });

  test("every duration setting (*_MS) takes at most the longest timer delay, 2^31 - 1 ms, and refuses one more at start-up with its one line", () => {
    // every one, whether it feeds a timer (RETENTION_INTERVAL_MS, ACTOR_IDLE_MS) or a deadline, reminder or lease
    const durations = Object.keys(CONFIG_VARS).filter((name) => name.endsWith("_MS"));
    expect(durations).toEqual(expect.arrayContaining(["TRUST_REFRESH_INTERVAL_MS", "ACTOR_IDLE_MS", "ACTOR_ASK_TIMEOUT_MS", "BRIDGE_IDEMPOTENCY_LEASE_MS", "RETENTION_INTERVAL_MS"]));
    expect(MAX_TIMER_MS).toBe(2 ** 31 - 1);
    for (const name of durations) {
      const schema = CONFIG_VARS[name as keyof typeof CONFIG_VARS].schema as { minimum?: number };
      expect({ name, value: loadConfig({ [name]: String(MAX_TIMER_MS) })[name as keyof typeof CONFIG_VARS] }).toEqual({ name, value: MAX_TIMER_MS });
      let err: unknown;
      try {
        loadConfig({ [name]: String(MAX_TIMER_MS + 1) });
      } catch (e) {
        err = e;
      }
      expect({ name, refused: err instanceof ConfigError, message: (err as Error | undefined)?.message }).toEqual({
        name,
        refused: true,
        message: `config: ${name}="2147483648" is invalid; allowed: an integer from ${schema.minimum} to 2147483647`,
      });
      expect(CONFIG_VARS[name as keyof typeof CONFIG_VARS].doc).toEndWith("At most 2147483647 (about 24.8 days, the longest timer delay).");
    }
  });

  test("production refuses disabled rate limits and private URLs", () => {
    expect(() => loadConfig({ NODE_ENV: "production", RATE_LIMITS_ENABLED: "false" })).toThrow(/RATE_LIMITS_ENABLED/);
    expect(() => loadConfig({ NODE_ENV: "production", ALLOW_PRIVATE_URLS: "true" })).toThrow(/ALLOW_PRIVATE_URLS/);
    expect(loadConfig({ NODE_ENV: "production" }).ALLOW_PRIVATE_URLS).toBe(false);
  });

  test("a production process over NATS without SITE_URL is refused, on every role: one token and trust score issuer", () => {
    const distributed = { NODE_ENV: "production", NATS_URL: "nats://127.0.0.1:4222" };
    // actor hosts too (review R4-1): they sign the trust score JWS with iss = SITE_URL
    for (const role of ["gateway", "start", "actors"] as const) {
      let err: unknown;
      try {
        checkRoleConfig(loadConfig(distributed), role);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe("SITE_URL");
      expect((err as Error).message).toContain("the same on every gateway");
    }
    // a shared SITE_URL, no NATS (one gateway) or a non-production run are accepted
    expect(() => checkRoleConfig(loadConfig({ ...distributed, SITE_URL: "https://shop.example.com" }), "actors")).not.toThrow();
    expect(() => checkRoleConfig(loadConfig({ ...distributed, SITE_URL: "https://shop.example.com" }), "gateway")).not.toThrow();
    expect(() => checkRoleConfig(loadConfig({ NODE_ENV: "production" }), "gateway")).not.toThrow();
    expect(() => checkRoleConfig(loadConfig({ NATS_URL: "nats://127.0.0.1:4222" }), "gateway")).not.toThrow();
  });

  test("REUSE_PORT is accepted on role gateway, ignored by role actors, refused on role start and with PORT=0", () => {
    expect(loadConfig({}).REUSE_PORT).toBe(false);
    const shared = { REUSE_PORT: "true", PORT: "8080", NATS_URL: "nats://127.0.0.1:4222" };
    expect(() => checkRoleConfig(loadConfig(shared), "gateway")).not.toThrow();
    // an actor host has no API port: a deployment's one env file may set it for every role
    expect(() => checkRoleConfig(loadConfig(shared), "actors")).not.toThrow();
    // a second `start` would host every actor a second time (two writers of one cart)
    let err: unknown;
    try {
      checkRoleConfig(loadConfig(shared), "start");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe("REUSE_PORT");
    expect((err as Error).message).toContain("false on role start");
    expect(() => checkRoleConfig(loadConfig({ ...shared, PORT: "0" }), "gateway")).toThrow(/REUSE_PORT=.*PORT=0/);
    expect(() => loadConfig({ REUSE_PORT: "yes please" })).toThrow(/REUSE_PORT/);
  });

  test.each(["gateway", "actors"])("bun gateway/main.ts %s exits 1 with that one line, before connecting to anything", async (role) => {
    const proc = Bun.spawn(["bun", new URL("../../gateway/main.ts", import.meta.url).pathname, role], {
      // nothing listens on these ports: the refusal must come before any connection is tried
      env: { ...process.env, NODE_ENV: "production", NATS_URL: "nats://127.0.0.1:1", DATABASE_URL: "postgres://postgres@127.0.0.1:1/none", SITE_URL: "" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect({ code, stderr: stderr.trim().split("\n").at(-1) }).toEqual({ code: 1, stderr: expect.stringMatching(/^config: SITE_URL="" is invalid; allowed: the deployment's public origin, the same on every gateway/) });
  }, 20_000);

  test("a malformed SECRET_KEY is refused without echoing it", () => {
    expect(() => loadConfig({ SECRET_KEY: "short-secret" })).toThrow(/^config: SECRET_KEY=<hidden> is invalid/);
  });

  test("the README lists every configuration variable", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    for (const name of Object.keys(CONFIG_VARS)) expect(readme).toContain(`\`${name}\``);
  });
});
