/**
 * The checks every ACP/UCP (and AP2) request passes before the bridge does any cart or payment work (audit F-1 … F-5).
 * A bridge keeps parts of the request on its session (`bridge_sessions.meta`: the buyer, the address) and in its
 * Idempotency-Key record; a value Postgres cannot store there (a NUL byte, a lone UTF-16 surrogate) used to be found
 * by the session's save, after the cart work: a create left a priced cart behind, an update had already abandoned
 * the session's cart or re-priced its shipping, and a complete had already charged the buyer, who was then told the
 * request was invalid. Refused here, first, in the protocol's own error shape (INVALID_ARGUMENT naming the field),
 * nothing has happened yet. The text rule is the one the catalog's ingestion applies (actors/store/ingest.ts
 * `unstorableField`).
 */
import { fail } from "../../actors/runtime/errors.ts";
import { unstorableField } from "../../actors/store/ingest.ts";
import { cutEcho } from "../../infra/echo.ts";
import { isObjectRecord } from "../plugins/json-body.ts";

/** `String.prototype.isWellFormed` (ES2024: no lone surrogate), a native scan; the project's lib is ES2023. */
const wellFormed = (s: string) => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Why a string cannot be stored (`unstorableField`'s words), or null. The common case, plain text, is decided by two
 * native scans; only a string that fails one is handed to `unstorableField` for its reason (its surrogate regex costs
 * about 1 µs per short string). A 1 MB body of 10,000 strings is walked in about 4 ms, less than parsing it takes.
 */
function unstorableReason(s: string): string | null {
  if (!s.includes("\u0000") && wellFormed(s)) return null;
  return unstorableField(s)?.message ?? null;
}

/** `field.key` (the key cut to ECHO_MAX_CHARS), as the bridges name a member of a request field. */
const member = (field: string, key: string) => `${field}.${cutEcho(key)}`;

/** A request field's path from its segments: `items[0].id`, `buyer.email` (member names cut to ECHO_MAX_CHARS). */
function pathOf(segments: (string | number)[]): string {
  let out = "";
  for (const seg of segments) out += typeof seg === "number" ? `[${seg}]` : out ? `.${cutEcho(seg)}` : cutEcho(seg);
  return out;
}

/** The segments to the first unstorable string, built only on the way back from a find (plain bodies build none). */
function findUnstorable(value: unknown): { segments: (string | number)[]; reason: string } | null {
  if (typeof value === "string") {
    const reason = unstorableReason(value);
    return reason ? { segments: [], reason } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = findUnstorable(value[i]);
      if (bad) {
        bad.segments.unshift(i);
        return bad;
      }
    }
    return null;
  }
  if (isObjectRecord(value)) {
    for (const k of Object.keys(value)) {
      const reason = unstorableReason(k);
      if (reason) return { segments: [], reason: `has a member name that ${reason}` };
      const bad = findUnstorable(value[k]);
      if (bad) {
        bad.segments.unshift(k);
        return bad;
      }
    }
  }
  return null;
}

/**
 * The first string (value or member name) of a request body that Postgres cannot store, as the field it is in and
 * why, or null. A member name that cannot be stored is named by its parent (the name itself would be echoed).
 */
export function unstorableInput(value: unknown): { field: string; reason: string } | null {
  const bad = findUnstorable(value);
  return bad ? { field: pathOf(bad.segments), reason: bad.reason } : null;
}

/** Refuses a request body holding text Postgres cannot store: 400 INVALID_ARGUMENT naming the field. */
export function assertStorableRequest(body: unknown): void {
  const bad = unstorableInput(body);
  if (!bad) return;
  const field = bad.field || "body";
  throw fail("INVALID_ARGUMENT", `${field} ${bad.reason}.`, { field, reason: "unstorable_text" });
}

/** The longest text a bridged buyer or address member may hold (an email address: RFC 5321's 320 at most). */
export const MAX_MEMBER_CHARS = 320;
/**
 * An email address as the protocols' schemas type it (`format: email`: ACP's Buyer and FulfillmentDetails, UCP's
 * Buyer), by the check strict clients validate answers with: ajv-formats' `email` (its default "full" mode), a
 * dot-atom local part and a dotted domain of LDH labels. A looser check kept "ada@example" and echoed it, and the
 * whole session then failed a strict client's validation (audit B-3).
 */
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

/**
 * What a protocol's object of optional string members (a Buyer, an Address) is, as its published schema says.
 * - `strings`: the string members the session keeps and echoes.
 * - `checked`: members the protocol defines that the bridge does not use: each is checked against its schema type
 *   (its function throws on a wrong one) and then dropped, never kept or echoed.
 * - `others`: a member the schema does not name. `"refuse"` where the schema forbids them (`additionalProperties:
 *   false`, with `schema` cited in the refusal), `"drop"` where it allows them (not kept, not echoed, not refused).
 */
export interface MemberRules {
  what: string;
  strings: readonly string[];
  checked?: Readonly<Record<string, (v: unknown, at: string) => void>>;
  others: "refuse" | "drop";
  /** The schema the rule comes from, named in a refusal of another member. */
  schema: string;
}

/**
 * An object of optional string members (a protocol's Buyer or Address: `rules`), copied with only its `strings`
 * members, or null ("none"); undefined: not in the request. A kept member is a string of at most MAX_MEMBER_CHARS
 * Postgres can store (an `email` member an address). `""` (or only blanks) and null are an absent member: both
 * protocols type these members as strings with no minimum length, and address forms send `line_two: ""`. A value of
 * another type than an object, a kept member of another type or over the bound, a `checked` member of the wrong
 * type, or another member where the schema forbids them, is 400 INVALID_ARGUMENT naming it (audit F-4: `buyer: 42`,
 * a 100,000-character string and `[1, 2]` were stored and echoed). Review RA-2: UCP's Buyer allows other members
 * (its extensions, such as 2026-01-11's `consent`), which were refused; they are now dropped.
 */
export function knownStringMembers(raw: unknown, field: string, rules: MemberRules): Record<string, string> | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === null) return null;
  const { what, strings } = rules;
  if (!isObjectRecord(raw)) throw fail("INVALID_ARGUMENT", `${field} must be ${what}: an object with string members ${strings.join(", ")} (or null).`, { field });
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    const at = member(field, k);
    if (!strings.includes(k)) {
      const check = rules.checked && Object.hasOwn(rules.checked, k) ? rules.checked[k] : undefined;
      if (check) check(v, at);
      else if (rules.others === "refuse") {
        throw fail("INVALID_ARGUMENT", `${at} is not a member of ${what} (it has ${strings.join(", ")}; ${rules.schema} allows no other).`, { field: at, allowed: [...strings] });
      }
      continue;
    }
    if (v === null || v === undefined) continue;
    if (typeof v !== "string" || v.length > MAX_MEMBER_CHARS) {
      throw fail("INVALID_ARGUMENT", `${at} must be a string of at most ${MAX_MEMBER_CHARS} characters.`, { field: at });
    }
    if (v.trim().length === 0) continue;
    const reason = unstorableReason(v);
    if (reason) throw fail("INVALID_ARGUMENT", `${at} ${reason}.`, { field: at, reason: "unstorable_text" });
    if (k === "email" && !EMAIL.test(v)) throw fail("INVALID_ARGUMENT", `${at} must be an email address (name@domain.tld).`, { field: at });
    out[k] = v;
  }
  return out;
}

/**
 * A checker for an optional object member whose listed members are optional booleans (UCP's Buyer `consent`): the
 * object or null, each listed member a boolean or null when present; other members of it are allowed (its schema
 * does not forbid them). 400 INVALID_ARGUMENT naming what is wrong.
 */
export function booleanMembersObject(what: string, members: readonly string[]): (v: unknown, at: string) => void {
  return (v, at) => {
    if (v === null || v === undefined) return;
    if (!isObjectRecord(v)) throw fail("INVALID_ARGUMENT", `${at} must be ${what}: an object with boolean members ${members.join(", ")} (or null).`, { field: at });
    for (const m of members) {
      const b = v[m];
      if (b !== undefined && b !== null && typeof b !== "boolean") throw fail("INVALID_ARGUMENT", `${member(at, m)} must be a boolean.`, { field: member(at, m) });
    }
  };
}
