/**
 * RETENTION_AP2_MANDATE_GRACE_DAYS is at least one day (review V1-3): a gateway judges a mandate's expiry by its own
 * clock, the retention job by the database's and its own, and the grace is what covers a gateway clock behind them.
 * With 0, a gateway 20 s slow still took a mandate as live after the job had deleted the binding that refuses it for a
 * second cart, and the mandate paid that cart.
 */
import { expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../infra/config.ts";

test("a grace of 0 days for AP2 mandate bindings is refused at start-up, naming the setting and the allowed range", () => {
  let err: unknown;
  try {
    loadConfig({ RETENTION_AP2_MANDATE_GRACE_DAYS: "0" });
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).variable).toBe("RETENTION_AP2_MANDATE_GRACE_DAYS");
  expect((err as ConfigError).message).toMatch(/^config: RETENTION_AP2_MANDATE_GRACE_DAYS="0" is invalid; allowed: an integer from 1 /);
});

test("a grace of 1 day is the least accepted, and 7 is the default", () => {
  expect(loadConfig({ RETENTION_AP2_MANDATE_GRACE_DAYS: "1" }).RETENTION_AP2_MANDATE_GRACE_DAYS).toBe(1);
  expect(loadConfig({}).RETENTION_AP2_MANDATE_GRACE_DAYS).toBe(7);
});
