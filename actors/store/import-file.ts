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
 *
 * Both also read the file the same way (`linesOf`): chunk by chunk, one line at a time, never the whole file split
 * into an array (the dashboard's `body.split` of a 20 MB upload of `x` lines held 10 million strings: audit X-F1).
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

/** A line of an import file: its 1-based number, its text (without the line break) and the bytes read so far. */
export interface ImportLine {
  line: number;
  text: string;
  /** Bytes of the file read so far (progress). */
  bytesRead: number;
}

/**
 * The lines of a byte stream (a file's `stream()`), with their 1-based numbers, split on "\n" (a "\r" before it is
 * dropped), the last line yielded when it is not empty. Memory holds one chunk and the line being read; a line that
 * spans chunks is kept in pieces and joined once (no re-scan of a growing string per chunk).
 */
export async function* linesOf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<ImportLine> {
  const decoder = new TextDecoder();
  let pieces: string[] = [];
  let line = 0;
  let bytesRead = 0;
  const take = (tail: string): string => {
    const whole = pieces.length ? pieces.join("") + tail : tail;
    pieces = [];
    return whole;
  };
  const strip = (text: string): string => (text.endsWith("\r") ? text.slice(0, -1) : text);
  for await (const chunk of chunks) {
    bytesRead += chunk.byteLength;
    const text = decoder.decode(chunk, { stream: true });
    let from = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", from)) {
      yield { line: ++line, text: strip(take(text.slice(from, nl))), bytesRead };
      from = nl + 1;
    }
    if (from < text.length) pieces.push(text.slice(from));
  }
  const rest = take(decoder.decode());
  if (rest.length > 0) yield { line: ++line, text: strip(rest), bytesRead };
}

/** How many lines `bytes` holds (as `linesOf` numbers them), counting no further than `stopAfter` + 1. */
export function countLines(bytes: Uint8Array, stopAfter: number): number {
  let lines = 0;
  let from = 0;
  for (let nl = bytes.indexOf(10); nl !== -1 && lines <= stopAfter; nl = bytes.indexOf(10, from)) {
    lines++;
    from = nl + 1;
  }
  return lines <= stopAfter && from < bytes.length ? lines + 1 : lines;
}
