import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../infra/config.ts";

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("the setting was accepted");
}

describe("a refused setting's start-up error (audit O-2)", () => {
  test("does not show a password's value", () => {
    const message = refusal({ ADMIN_PASSWORD: "hunter7" });
    expect(message).toStartWith("config: ADMIN_PASSWORD=<hidden> is invalid; allowed:");
    expect(message).not.toContain("hunter7");
  });

  test("shows a URL by its scheme and host only", () => {
    const message = refusal({ DATABASE_URL: "postgresql+psycopg://app:Db-Pa55word@db.internal:5432/shop" });
    expect(message).not.toContain("Db-Pa55word");
    expect(message).toContain('"postgresql+psycopg://db.internal:5432" (the rest hidden)');
    expect(refusal({ MEILISEARCH_URL: "ftp://admin:s3cret@search" })).not.toContain("s3cret");
  });

  test("no spelling of a database password reaches the message (review RD-3)", () => {
    for (const [raw, secret] of [
      ["host=db user=app password=Pa55-libpq dbname=shop", "Pa55-libpq"],
      ["mysql://app:p@ss-word@db/shop", "ss-word"],
      ["mysql://app:pa/ss-word@db/shop", "ss-word"],
      ["mysql://db/shop?password=q-Pa55", "q-Pa55"],
      ["mysql://app:9876#q@db/app", "9876"],
      ["mysql://app:9876?q@db/app", "9876"],
    ] as const) expect(refusal({ DATABASE_URL: raw })).not.toContain(secret);
  });

  test("quotes an ordinary value as it was given, so the typo is visible", () => {
    expect(refusal({ RETENTION_BATCH: "lots" })).toStartWith('config: RETENTION_BATCH="lots" is invalid;');
  });
});
