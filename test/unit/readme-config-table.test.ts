/** README.md's configuration table is exactly what `bun infra/gen-config-table.ts` renders from infra/config.ts. */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { configTable, readmeConfigTable } from "../../infra/gen-config-table.ts";

test("README configuration table = CONFIG_VARS (regenerate: bun infra/gen-config-table.ts)", () => {
  const readme = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
  expect(readmeConfigTable(readme).text).toBe(configTable());
});
