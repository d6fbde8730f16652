/**
 * The one statement that makes a turn durable: the actor's state row fenced by version, the reminders the turn
 * scheduled or cancelled, and the reply a retried message will get, as one data-modifying CTE. Everything hangs
 * off the fenced write (`FROM turn_state`), so a stale version writes nothing at all, and the statement then raises
 * (SQLSTATE AF001, migration 0003) instead of reporting zero rows: a transaction it is part of is aborted, which
 * lets the runtime send it and COMMIT in one round trip.
 *
 * A turn may also hand the runtime writes of its own to ride in that statement (`RidingWrite`, host.ts
 * `checkpointWith`): their CTEs come first, and one autocommit statement replaces BEGIN, the turn's statement, the
 * state statement and COMMIT. Such a write refuses a result it did not expect by raising SQLSTATE AF002
 * (`actor_write_refused`, migration 0008), which rolls back the whole statement, state included.
 *
 * The inbox row is the turn's reply, or, for a mid-turn checkpoint over a lossy transport, a "pending" marker that
 * keeps a resend from running the handler on the half-finished turn's state (migration 0009, host.ts). An inbox row
 * already in its place that it may not replace raises SQLSTATE AF003 (`actor_already_answered`), aborting it all.
 *
 * Texts are built once per shape (insert or update × reminders set, deleted, both or none × reply, pending marker
 * or neither) and sent as prepared statements, so Postgres plans each shape once per connection.
 */
import type { PendingQuery, Row } from "postgres";
import { withoutDeadline, type Sql } from "../../infra/db.ts";

/** A postgres.js query fragment (sql`…`), nested into the statement it rides in. */
export type SqlFragment = PendingQuery<Row[]>;

/** What a turn asked of its reminders, last call per name wins. `due` on a delete: only if still due then. */
export type ReminderOp = { op: "set"; dueAt: string; payload: unknown } | { op: "delete"; due?: string };

export interface StateWrite {
  kind: string;
  id: string;
  /** The version the activation loaded (0: none yet, the row is inserted and must not exist). */
  version: number;
  stateJson: string;
  /**
   * The state's expiry as its kind's retention rule reads it (`ActorDefinition.expiryOf`, whole ms since the epoch), or
   * undefined: the row's `expiry_ms` is left as it is. Written only when the stored one is unset, above it, or more
   * than EXPIRY_SLACK_MS behind it (migration 0096), so most turns leave the column alone and their update stays HOT.
   */
  expiry?: number;
  reminders: Map<string, ReminderOp>;
  /**
   * `expiresInMs`: how long the reply is kept, counted by the database from the statement's own time
   * (statement_timestamp()), so the writing host's clock skew from the database's never reaches the row. A whole
   * number of ms made by the caller: every parameter is text or a number before the statement is sent, so
   * postgres.js cannot fail to serialise one on the client after BEGIN went out — a statement refused locally is
   * never sent, but the COMMIT pipelined behind it would be, committing the turn's writes unfenced.
   */
  reply?: { msgId: string; json: string; expiresInMs: number; turn?: string };
  /**
   * Instead of a reply, a mid-turn checkpoint's "pending" marker for its message (migration 0009): `forMs` (whole ms,
   * counted by the database as `expiresInMs` is; the row's expiry too) is how long the run may still answer, `turn`
   * the run's token (`<host id>/<random>`, host.ts). `reply.turn` is that token again on the run's final write,
   * which replaces its own marker.
   */
  pending?: { msgId: string; forMs: number; turn: string };
  /**
   * The token of a marker of this message that the host judged dead although its time has not passed (its host left
   * the membership): the run that took over may replace it, as it may replace an expired one.
   */
  replacesMarker?: string;
}

/**
 * How far `actor_state.expiry_ms` may lag behind the expiry a turn reports before the turn writes it again (migration
 * 0096). The column is a lower bound that a retention rule reads through an index: a turn whose write changes it is
 * not HOT, so a sliding expiry is written at most about once an hour per actor, and the rule may examine a row up to
 * this much early (it judges the state itself before deleting).
 */
export const EXPIRY_SLACK_MS = 60 * 60 * 1000;

/** The SQLSTATE of a failed version fence. */
export const FENCE_FAILED = "AF001";
/** The SQLSTATE a riding write raises (actor_write_refused) when its result is not the one it was sent for. */
export const WRITE_REFUSED = "AF002";
/**
 * The SQLSTATE of a turn whose inbox row found another in its place (actor_already_answered): the message's final
 * reply, or a marker of another run of it that has not expired.
 */
export const ALREADY_ANSWERED = "AF003";

/**
 * A turn's own writes sent in its state statement: `ctes` (without `WITH`, no trailing comma) and `select`, the
 * result columns they add (a guard among them raises AF002 through `actor_write_refused(reason)` when the turn
 * must not go ahead). CTE names starting with `turn_` are the runtime's.
 */
export interface RidingWrite {
  ctes: SqlFragment;
  select: SqlFragment;
}

interface Shape {
  /** The CTEs, `$n` numbered as in `stateWriteStatement`'s params. */
  ctes: string;
  /** The result column that raises AF001 when the fence failed. */
  check: string;
  /** The whole statement of a turn without riding writes. */
  text: string;
}

const shapes = new Map<string, Shape>();

/** What a turn writes to actor_inbox: nothing, its reply, or its pending marker. */
type InboxWrite = "none" | "reply" | "pending";

function shapeFor(insert: boolean, sets: boolean, deletes: boolean, inbox: InboxWrite): Shape {
  const key = `${+insert}${+sets}${+deletes}${inbox}`;
  const reminders = sets || deletes;
  const cached = shapes.get(key);
  if (cached) return cached;
  // $1 kind, $2 id, $3 state, $4 expiry; then, numbered in order of use: version (update), reminder ops, reply fields
  let n = 4;
  const version = insert ? "" : `$${++n}`;
  const ops = reminders ? `$${++n}` : "";
  const [msgId, replyJson, expires, token] = inbox === "reply" ? [`$${++n}`, `$${++n}`, `$${++n}`, `$${++n}`] : [];
  const [pMsgId, forMs, pToken] = inbox === "pending" ? [`$${++n}`, `$${++n}`, `$${++n}`] : [];
  // the database's clock, not the writing host's: readers compare with now() (statement_timestamp(), not the
  // transaction's start: a turn's transaction may have been open for a while when its write is sent)
  const after = (ms: string | undefined) => `statement_timestamp() + ${ms}::int8 * interval '1 millisecond'`;
  const dead = inbox === "none" ? undefined : `$${++n}`;
  const parts = [
    insert
      ? `turn_state AS (INSERT INTO actor_state (kind, id, version, state, expiry_ms) VALUES ($1, $2, 1, $3::text::jsonb, $4::int8)
           ON CONFLICT (kind, id) DO NOTHING RETURNING 1)`
      : // expiry_ms keeps its value (the same value: the update stays HOT) unless the turn reports an expiry the stored
        // one is not a close lower bound of; compared in the row the update writes, so a retention run's clearing of it
        // (infra/retention.ts) committed first is seen
        `turn_state AS (UPDATE actor_state SET version = version + 1, state = $3::text::jsonb, updated_at = now(),
             expiry_ms = CASE WHEN $4::int8 IS NULL OR (expiry_ms <= $4::int8 AND expiry_ms > $4::int8 - ${EXPIRY_SLACK_MS}) THEN expiry_ms ELSE $4::int8 END
           WHERE kind = $1 AND id = $2 AND version = ${version} RETURNING 1)`,
  ];
  if (reminders) {
    const opsTable = `jsonb_to_recordset(${ops}::text::jsonb) AS o(name text, op text, due_at timestamptz, due timestamptz, payload jsonb)`;
    // Only the kinds of change the turn made: a modifying CTE costs its table's opening and locks (and an insert's,
    // its indexes') even when it changes no row, and most turns only set or only delete.
    if (deletes) {
      parts.push(`turn_rd AS (DELETE FROM actor_reminders r USING turn_state, ${opsTable}
           WHERE o.op = 'delete' AND r.kind = $1 AND r.id = $2 AND r.name = o.name AND (o.due IS NULL OR r.due_at = o.due))`);
    }
    if (sets) {
      parts.push(`turn_rs AS (INSERT INTO actor_reminders (kind, id, name, due_at, payload)
           SELECT $1, $2, o.name, o.due_at, COALESCE(o.payload, 'null'::jsonb) FROM turn_state, ${opsTable} WHERE o.op = 'set'
           ON CONFLICT (kind, id, name) DO UPDATE SET due_at = EXCLUDED.due_at, payload = EXCLUDED.payload)`);
    }
  }
  // An inbox row in the way is replaced only when it is a marker (reply NULL) of this run (its token) or one whose run
  // may no longer answer (expired, or the dead host's marker this run was started over); otherwise turn_ib returns no
  // row and the check raises AF003 (AlreadyApplied).
  if (inbox === "reply") {
    parts.push(`turn_ib AS (INSERT INTO actor_inbox AS i (kind, id, msg_id, reply, expires_at)
           SELECT $1, $2, ${msgId}, ${replyJson}::text::jsonb, ${after(expires)} FROM turn_state
           ON CONFLICT (kind, id, msg_id) DO UPDATE SET reply = EXCLUDED.reply, expires_at = EXCLUDED.expires_at, pending_until = NULL, pending_turn = NULL
           WHERE i.reply IS NULL AND (i.pending_turn = ${token}::text OR i.pending_turn = ${dead}::text OR i.pending_until <= now())
           RETURNING 1)`);
  } else if (inbox === "pending") {
    parts.push(`turn_ib AS (INSERT INTO actor_inbox AS i (kind, id, msg_id, reply, expires_at, pending_until, pending_turn)
           SELECT $1, $2, ${pMsgId}, NULL, ${after(forMs)}, ${after(forMs)}, ${pToken}::text FROM turn_state
           ON CONFLICT (kind, id, msg_id) DO UPDATE SET expires_at = EXCLUDED.expires_at, pending_until = EXCLUDED.pending_until, pending_turn = EXCLUDED.pending_turn
           WHERE i.reply IS NULL AND (i.pending_turn = EXCLUDED.pending_turn OR i.pending_turn = ${dead}::text OR i.pending_until <= now())
           RETURNING 1)`);
  }
  const ctes = parts.join(",\n");
  // the fence is tested first: a stale version is reported as such even when the inbox row would refuse too
  const inboxMsgId = msgId ?? pMsgId;
  const check = inboxMsgId
    ? `CASE WHEN NOT EXISTS (SELECT 1 FROM turn_state) THEN actor_fence_failed($1, $2) WHEN NOT EXISTS (SELECT 1 FROM turn_ib) THEN actor_already_answered($1, $2, ${inboxMsgId}::text) ELSE 1 END`
    : "CASE WHEN EXISTS (SELECT 1 FROM turn_state) THEN 1 ELSE actor_fence_failed($1, $2) END";
  const shape = { ctes, check, text: `WITH ${ctes}\n    SELECT ${check} AS ok` };
  shapes.set(key, shape);
  return shape;
}

/** The statement text and its parameters for one turn's write, and its shape (for `ridingStatement`). */
export function stateWriteStatement(w: StateWrite): { text: string; params: (string | number | null)[]; shape: Shape } {
  const insert = w.version === 0;
  if (!Number.isSafeInteger(w.version) || w.version < 0) throw new Error(`actor ${w.kind}/${w.id}: invalid version ${w.version}`);
  if (w.reply && w.pending) throw new Error(`actor ${w.kind}/${w.id}: a turn's write carries its reply or its pending marker, not both`);
  // refused here, before anything is sent, as `wholeMs` refuses a time left
  if (w.expiry !== undefined && !Number.isSafeInteger(w.expiry)) throw new Error(`actor ${w.kind}/${w.id}: invalid expiry ${w.expiry}`);
  const params: (string | number | null)[] = [w.kind, w.id, w.stateJson, w.expiry ?? null];
  if (!insert) params.push(w.version);
  if (w.reminders.size) {
    const ops = [...w.reminders].map(([name, op]) =>
      op.op === "set" ? { name, op: "set", due_at: op.dueAt, payload: op.payload ?? null } : { name, op: "delete", due: op.due ?? null },
    );
    params.push(JSON.stringify(ops));
  }
  if (w.reply) params.push(w.reply.msgId, w.reply.json, wholeMs(w, w.reply.expiresInMs), w.reply.turn ?? null);
  if (w.pending) params.push(w.pending.msgId, wholeMs(w, w.pending.forMs), w.pending.turn);
  if (w.reply || w.pending) params.push(w.replacesMarker ?? null);
  let sets = false;
  let deletes = false;
  for (const op of w.reminders.values()) {
    if (op.op === "set") sets = true;
    else deletes = true;
  }
  const shape = shapeFor(insert, sets, deletes, w.reply ? "reply" : w.pending ? "pending" : "none");
  return { text: shape.text, params, shape };
}

/** A time left as the int8 the statement casts it to, refused here (before anything is sent) if it is not one. */
function wholeMs(w: StateWrite, ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new Error(`actor ${w.kind}/${w.id}: invalid time left ${ms}`);
  return ms;
}

/** A `$n`-numbered text as template strings and the parameter index of each gap (cached per text). */
const templates = new Map<string, { strings: TemplateStringsArray; refs: number[] }>();

function templateOf(text: string): { strings: TemplateStringsArray; refs: number[] } {
  let t = templates.get(text);
  if (t) return t;
  const pieces = text.split(/\$(\d+)/);
  const strings = pieces.filter((_, i) => i % 2 === 0);
  const refs = pieces.filter((_, i) => i % 2 === 1).map((n) => Number(n) - 1);
  t = { strings: Object.assign(strings.slice(), { raw: strings.slice() }) as unknown as TemplateStringsArray, refs };
  templates.set(text, t);
  return t;
}

/**
 * The state statement with a riding write: `WITH <its CTEs>, <the state's CTEs> SELECT <fence check>, <its columns>`.
 * The state's text stays the single source (the `$n` of its shape become fragment parameters), so both forms
 * write exactly the same rows. The fence column comes first: a stale version is reported as such even when the
 * riding write's guard would refuse too.
 */
export function ridingStatement(sql: Sql, w: StateWrite, write: RidingWrite) {
  const { params, shape } = stateWriteStatement(w);
  const ctes = templateOf(shape.ctes);
  const check = templateOf(shape.check);
  const tagged = (t: { strings: TemplateStringsArray; refs: number[] }) => sql(t.strings, ...t.refs.map((i) => params[i]));
  // a turn's write waits for the database however long it takes: no pool deadline (infra/db.ts `withoutDeadline`)
  return withoutDeadline(sql)`WITH ${write.ctes},
    ${tagged(ctes)}
    SELECT ${tagged(check)} AS turn_ok, ${write.select}`;
}

export function isFenceFailure(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === FENCE_FAILED;
}

/**
 * The turn's inbox row found the message's reply in its place, so another activation applied it first (over NATS
 * both owners of a moving partition can get one message), or another run's marker that has not expired (that run
 * may still answer). The statement wrote nothing.
 */
export function isDuplicateReply(err: unknown): boolean {
  const e = err as { code?: string; constraint_name?: string } | null;
  // AF003 since the inbox row became an upsert over markers (migration 0009); 23505 from a statement built before it
  return e?.code === ALREADY_ANSWERED || (e?.code === "23505" && e.constraint_name === "actor_inbox_pkey");
}

/** A riding write's guard refused (nothing of the statement was written). */
export function isWriteRefused(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === WRITE_REFUSED;
}
