import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { CONFIG_VARS, ConfigError, loadConfig } from "../../infra/config.ts";

describe("configuration", () => {
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

  test("production refuses disabled rate limits and private URLs", () => {
    expect(() => loadConfig({ NODE_ENV: "production", RATE_LIMITS_ENABLED: "false" })).toThrow(/RATE_LIMITS_ENABLED/);
    expect(() => loadConfig({ NODE_ENV: "production", ALLOW_PRIVATE_URLS: "true" })).toThrow(/ALLOW_PRIVATE_URLS/);
    expect(loadConfig({ NODE_ENV: "production" }).ALLOW_PRIVATE_URLS).toBe(false);
  });

  test("a malformed SECRET_KEY is refused without echoing it", () => {
    expect(() => loadConfig({ SECRET_KEY: "short-secret" })).toThrow(/<redacted>/);
  });

  test("the README lists every configuration variable", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    for (const name of Object.keys(CONFIG_VARS)) expect(readme).toContain(`\`${name}\``);
  });
});
