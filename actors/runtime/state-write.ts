/**
 * The one statement that makes a turn durable: the actor's state row fenced by version, the reminders the turn
 * scheduled or cancelled, and the reply a retried message will get, as one data-modifying CTE. Everything hangs
 * off the fenced write (`FROM s`), so a stale version writes nothing at all, and the statement then raises
 * (SQLSTATE AF001, migration 0003) instead of reporting zero rows: a transaction it is part of is aborted, which
 * lets the runtime send it and COMMIT in one round trip.
 *
 * Texts are built once per shape (insert or update × reminders set, deleted, both or none × reply or not) and sent as prepared
 * statements, so Postgres plans each shape once per connection.
 */

/** What a turn asked of its reminders, last call per name wins. `due` on a delete: only if still due then. */
export type ReminderOp = { op: "set"; dueAt: string; payload: unknown } | { op: "delete"; due?: string };

export interface StateWrite {
  kind: string;
  id: string;
  /** The version the activation loaded (0: none yet, the row is inserted and must not exist). */
  version: number;
  stateJson: string;
  reminders: Map<string, ReminderOp>;
  /**
   * `expiresAt` as an ISO string made by the caller: every parameter is text or a number before the statement is
   * sent, so postgres.js cannot fail to serialise one on the client after BEGIN went out — a statement refused
   * locally is never sent, but the COMMIT pipelined behind it would be, committing the turn's writes unfenced.
   */
  reply?: { msgId: string; json: string; expiresAt: string };
}

/** The SQLSTATE of a failed version fence. */
export const FENCE_FAILED = "AF001";

const texts = new Map<string, string>();

function textFor(insert: boolean, sets: boolean, deletes: boolean, reply: boolean): string {
  const key = `${+insert}${+sets}${+deletes}${+reply}`;
  const reminders = sets || deletes;
  let text = texts.get(key);
  if (text) return text;
  // $1 kind, $2 id, $3 state; then, numbered in order of use: version (update), reminder ops, reply fields
  let n = 3;
  const version = insert ? "" : `$${++n}`;
  const ops = reminders ? `$${++n}` : "";
  const [msgId, replyJson, expires] = reply ? [`$${++n}`, `$${++n}`, `$${++n}`] : [];
  const parts = [
    insert
      ? `s AS (INSERT INTO actor_state (kind, id, version, state) VALUES ($1, $2, 1, $3::text::jsonb)
           ON CONFLICT (kind, id) DO NOTHING RETURNING 1)`
      : `s AS (UPDATE actor_state SET version = version + 1, state = $3::text::jsonb, updated_at = now()
           WHERE kind = $1 AND id = $2 AND version = ${version} RETURNING 1)`,
  ];
  if (reminders) {
    const opsTable = `jsonb_to_recordset(${ops}::text::jsonb) AS o(name text, op text, due_at timestamptz, due timestamptz, payload jsonb)`;
    // Only the kinds of change the turn made: a modifying CTE costs its table's opening and locks (and an insert's,
    // its indexes') even when it changes no row, and most turns only set or only delete.
    if (deletes) {
      parts.push(`rd AS (DELETE FROM actor_reminders r USING s, ${opsTable}
           WHERE o.op = 'delete' AND r.kind = $1 AND r.id = $2 AND r.name = o.name AND (o.due IS NULL OR r.due_at = o.due))`);
    }
    if (sets) {
      parts.push(`rs AS (INSERT INTO actor_reminders (kind, id, name, due_at, payload)
           SELECT $1, $2, o.name, o.due_at, COALESCE(o.payload, 'null'::jsonb) FROM s, ${opsTable} WHERE o.op = 'set'
           ON CONFLICT (kind, id, name) DO UPDATE SET due_at = EXCLUDED.due_at, payload = EXCLUDED.payload)`);
    }
  }
  if (reply) {
    parts.push(`ib AS (INSERT INTO actor_inbox (kind, id, msg_id, reply, expires_at)
           SELECT $1, $2, ${msgId}, ${replyJson}::text::jsonb, ${expires}::timestamptz FROM s)`);
  }
  text = `WITH ${parts.join(",\n")}
    SELECT CASE WHEN EXISTS (SELECT 1 FROM s) THEN 1 ELSE actor_fence_failed($1, $2) END AS ok`;
  texts.set(key, text);
  return text;
}

/** The statement text and its parameters for one turn's write. */
export function stateWriteStatement(w: StateWrite): { text: string; params: (string | number)[] } {
  const insert = w.version === 0;
  if (!Number.isSafeInteger(w.version) || w.version < 0) throw new Error(`actor ${w.kind}/${w.id}: invalid version ${w.version}`);
  const params: (string | number)[] = [w.kind, w.id, w.stateJson];
  if (!insert) params.push(w.version);
  if (w.reminders.size) {
    const ops = [...w.reminders].map(([name, op]) =>
      op.op === "set" ? { name, op: "set", due_at: op.dueAt, payload: op.payload ?? null } : { name, op: "delete", due: op.due ?? null },
    );
    params.push(JSON.stringify(ops));
  }
  if (w.reply) params.push(w.reply.msgId, w.reply.json, w.reply.expiresAt);
  let sets = false;
  let deletes = false;
  for (const op of w.reminders.values()) {
    if (op.op === "set") sets = true;
    else deletes = true;
  }
  return { text: textFor(insert, sets, deletes, !!w.reply), params };
}

export function isFenceFailure(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === FENCE_FAILED;
}
