/**
 * The whole-file rule of a JSON-lines catalog import, shared by the CLI (`bun run cli import`, infra/cli.ts) and the
 * dashboard's upload (gateway/dashboard/index.ts). Both send the file in batches of `ingestCatalog`, and the store
 * actor only sees repeats inside one batch (validateCatalogItems: "repeated in this batch"). So without this rule a
 * repeated externalId in a later batch overwrote the earlier line, and the result depended on where the batch
 * boundaries fell (audit A2 LOW-2). The rule: the first line carrying an externalId is the one sent; a later line
 * with the same externalId is refused before sending, whatever batch it would fall in.
 */

/** A refusal in the store actor's per-item shape (`field`, `message`). */
export interface FileRepeat {
  externalId: string;
  field: "externalId";
  message: string;
}

/** The line's externalId when it is an object carrying a string one (anything else is the store actor's to judge). */
export function lineExternalId(item: unknown): string | null {
  if (!item || typeof item !== "object" || Array.isArray(item)) return null;
  const id = (item as { externalId?: unknown }).externalId;
  return typeof id === "string" ? id : null;
}

/**
 * A tracker for one file: `check(item, line)` remembers the first line of each externalId and answers the refusal
 * for a later one (null: send it). Memory holds the externalIds seen, not the file. Ids compare exactly, as the
 * store's upsert key does.
 */
export function externalIdRepeats(): { check(item: unknown, line: number): FileRepeat | null } {
  const firstLineOf = new Map<string, number>();
  return {
    check(item, line) {
      const externalId = lineExternalId(item);
      if (externalId === null) return null;
      const first = firstLineOf.get(externalId);
      if (first !== undefined) return { externalId, field: "externalId", message: `repeated in this file (first on line ${first})` };
      firstLineOf.set(externalId, line);
      return null;
    },
  };
}
