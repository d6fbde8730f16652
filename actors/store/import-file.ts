/**
 * The whole-file rule of a JSON-lines catalog import, shared by the CLI (`bun run cli import`, infra/cli.ts) and the
 * dashboard's upload (gateway/dashboard/index.ts). Both send the file in batches of `ingestCatalog`, and the store
 * actor only sees repeats inside one batch (validateCatalogItems: a valid item whose externalId an earlier *valid*
 * item of the batch carries is "repeated in this batch"). So without this rule a repeated externalId in a later
 * batch overwrote the earlier line, and the result depended on where the batch boundaries fell (audit A2 LOW-2).
 *
 * The rule: the first line the store ACCEPTS with an externalId wins. A later line with that externalId is refused
 * (not sent when the accepted line was in an earlier batch; the actor's in-batch refusal, reworded, when it was in
 * the same batch). A line the store rejected claims nothing, so a merchant's correction appended after a rejected
 * line is imported, as PUT /catalog does with both in one batch (review R5-1). The ids are recorded from the store's
 * per-item answer (`upserted[].index`), the batches being sent one after the other, so the outcome of every line is
 * the same whatever the batch size.
 */
import type { ItemError, RejectedItem } from "./ingest.ts";

/** A refusal in the store actor's per-item shape (`field`, `message`). */
export interface FileRepeat {
  externalId: string;
  field: "externalId";
  message: string;
}

/** A line sent in a batch: its 1-based number in the file and the parsed item. */
export interface SentLine {
  line: number;
  item: unknown;
}

/** What the store answered for a batch (`ingestCatalog`, PUT /catalog): the accepted items' and the rejected items' indexes. */
export interface BatchAnswer {
  upserted: readonly { index: number }[];
  rejected: readonly RejectedItem[];
}

/** A rejected line of a batch, with the errors to show. */
export interface LineRejection {
  line: number;
  externalId: string | null;
  errors: ItemError[];
}

/** The line's externalId when it is an object carrying a string one (anything else is the store actor's to judge). */
export function lineExternalId(item: unknown): string | null {
  if (!item || typeof item !== "object" || Array.isArray(item)) return null;
  const id = (item as { externalId?: unknown }).externalId;
  return typeof id === "string" ? id : null;
}

/** Says why the line is refused and what to do: appending a line does not change an imported one. */
export function repeatMessage(acceptedLine: number): string {
  return `repeated in this file (imported from line ${acceptedLine}; a later line does not replace it, correct line ${acceptedLine} instead)`;
}

/**
 * A tracker for one file. `check(item, line)` answers the refusal for a line whose externalId an earlier line
 * already got accepted with (null: send it); `settle(batch, answer)` records the accepted lines of a batch and
 * returns its rejections per line, an in-batch repeat reworded as `check` would have refused it. Call `settle`
 * before checking the next batch's lines. Memory holds the accepted externalIds, not the file. Ids compare exactly,
 * as the store's upsert key does.
 */
export function externalIdRepeats(): {
  check(item: unknown, line: number): FileRepeat | null;
  settle(batch: readonly SentLine[], answer: BatchAnswer): LineRejection[];
} {
  const acceptedLineOf = new Map<string, number>();
  const refusal = (externalId: string, line: number): FileRepeat | null => {
    const accepted = acceptedLineOf.get(externalId);
    return accepted !== undefined && accepted < line ? { externalId, field: "externalId", message: repeatMessage(accepted) } : null;
  };
  return {
    check(item, line) {
      const externalId = lineExternalId(item);
      return externalId === null ? null : refusal(externalId, line);
    },
    settle(batch, answer) {
      const accepted = new Set(answer.upserted.map((u) => u.index));
      const rejectedAt = new Map(answer.rejected.map((r) => [r.index, r]));
      const out: LineRejection[] = [];
      // In batch order, so an accepted line is recorded before the lines after it are judged.
      batch.forEach((sent, index) => {
        const externalId = lineExternalId(sent.item);
        if (accepted.has(index)) {
          if (externalId !== null && !acceptedLineOf.has(externalId)) acceptedLineOf.set(externalId, sent.line);
          return;
        }
        const rejection = rejectedAt.get(index);
        if (!rejection) return;
        // A line after the accepted one is refused as a repeat alone, as it would be from a later batch (whatever
        // else the actor found wrong with it), so the report does not depend on the batch boundaries either.
        const repeat = externalId === null ? null : refusal(externalId, sent.line);
        out.push(
          repeat
            ? { line: sent.line, externalId: repeat.externalId, errors: [{ field: repeat.field, message: repeat.message }] }
            : { line: sent.line, externalId: rejection.externalId, errors: rejection.errors },
        );
      });
      return out;
    },
  };
}
