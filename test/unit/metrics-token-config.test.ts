/**
 * METRICS_TOKEN (audit X-5; docs/operations.md, Metrics): the bearer token a scrape of the API port's /metrics needs.
 * A short token is refused at start-up (it would be guessable), and a refusal never shows the value.
 */
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../infra/config.ts";
import { metricsAccess } from "../../gateway/plugins/metrics.ts";

describe("METRICS_TOKEN", () => {
  test("unset, /metrics is open outside production and off in production", () => {
    expect(loadConfig({}).METRICS_TOKEN).toBe("");
    expect(metricsAccess(loadConfig({}))).toBe("open");
    expect(metricsAccess(loadConfig({ NODE_ENV: "test" }))).toBe("open");
    expect(metricsAccess(loadConfig({ NODE_ENV: "production" }))).toBe("off");
  });

  test("set, a scrape needs it in every environment", () => {
    const token = "0123456789abcdef0123";
    expect(metricsAccess(loadConfig({ METRICS_TOKEN: token }))).toBe("token");
    expect(metricsAccess(loadConfig({ METRICS_TOKEN: token, NODE_ENV: "production" }))).toBe("token");
  });

  test("a token under 16 characters is refused at start-up without showing it", () => {
    let error: unknown;
    try {
      loadConfig({ METRICS_TOKEN: "short-secret" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe("config: METRICS_TOKEN=<hidden> is invalid; allowed: a string of at least 16 printable ASCII characters, no whitespace");
  });
});
