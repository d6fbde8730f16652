import { expect, test } from "bun:test";
import { join } from "node:path";
import { renderToolDocs } from "../../gateway/mcp/gen-docs.ts";

test("docs/mcp-tools.md is what the registry generates (after a tool change: bun gateway/mcp/gen-docs.ts)", async () => {
  const onDisk = await Bun.file(join(import.meta.dir, "../../docs/mcp-tools.md")).text();
  expect(onDisk).toBe(renderToolDocs());
});
