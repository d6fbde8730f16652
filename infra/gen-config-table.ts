/**
 * `bun infra/gen-config-table.ts` rewrites README.md's configuration table from CONFIG_VARS (infra/config.ts: name,
 * default, doc), so the README cannot drift from the code; test/unit/readme-config-table.test.ts checks it did.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_VARS } from "./config.ts";

export const CONFIG_TABLE_HEADER = "| variable | default | meaning |\n|---|---|---|\n";

/** The table's rows, one per variable in CONFIG_VARS order: an empty default reads "(unset)". */
export function configTable(): string {
  const rows = Object.entries(CONFIG_VARS).map(([name, v]) => {
    const value = v.default === "" ? "(unset)" : `\`${String(v.default)}\``;
    return `| \`${name}\` | ${value} | ${v.doc.replace(/\|/g, "\\|")} |\n`;
  });
  return CONFIG_TABLE_HEADER + rows.join("");
}

/** The README's current table: from its header to the first line that is not a table row. */
export function readmeConfigTable(readme: string): { start: number; end: number; text: string } {
  const start = readme.indexOf(CONFIG_TABLE_HEADER);
  if (start < 0) throw new Error("README.md has no configuration table header");
  let end = start + CONFIG_TABLE_HEADER.length;
  while (readme.startsWith("| `", end)) end = readme.indexOf("\n", end) + 1;
  return { start, end, text: readme.slice(start, end) };
}

if (import.meta.main) {
  const path = join(import.meta.dir, "../README.md");
  const readme = readFileSync(path, "utf8");
  const { start, end } = readmeConfigTable(readme);
  writeFileSync(path, readme.slice(0, start) + configTable() + readme.slice(end));
}
