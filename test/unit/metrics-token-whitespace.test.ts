/**
 * METRICS_TOKEN that no scraper can present (review R2-4, on 24ed04d / audit X-5). A scrape's token is read with
 * /^Bearer\s+(\S+)\s*$/ (gateway/plugins/metrics.ts checkMetricsScrape) and HTTP clients trim header values, so a
 * configured token with whitespace in it, a control character, or a trailing newline (a secret file, or a Kubernetes
 * secret made with --from-file, put into the environment) used to start fine and then refuse every scrape (401,
 * counted against the scraper's public bucket). It is refused at start-up now, like a short one, without showing it.
 */
import { expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../infra/config.ts";
import { checkMetricsScrape } from "../../gateway/plugins/metrics.ts";

const REFUSED = "config: METRICS_TOKEN=<hidden> is invalid; allowed: a string of at least 16 printable ASCII characters, no whitespace";

for (const token of ["metrics-scrape-token-0123456789\n", "metrics scrape token 0123456789", "metrics-scrape-token\t0123456789", "metrics-scrape-token-\u00000123456789", "metrics-scrape-tökén-0123456789"]) {
  test(`METRICS_TOKEN ${JSON.stringify(token)} is refused at start-up without being shown`, () => {
    let error: unknown;
    try {
      loadConfig({ METRICS_TOKEN: token });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(REFUSED);
  });
}

test("a METRICS_TOKEN of printable characters loads and a scraper presenting it is admitted", () => {
  const token = "mt_A-b.c~d+e/f=0123456789!#$%";
  const config = loadConfig({ METRICS_TOKEN: token });
  expect(() => checkMetricsScrape(config, new Request("http://127.0.0.1/metrics", { headers: { authorization: `Bearer ${token}` } }), {})).not.toThrow();
});
