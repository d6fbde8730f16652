/**
 * Escaping-by-default HTML templates for the dashboard. `html\`…\`` escapes every interpolated value unless it is
 * already `Html` (the output of another template), so a product title, webhook URL or refund reason can never
 * become markup. Arrays are rendered item by item; null, undefined and false render as nothing.
 * There is deliberately no way to interpolate a raw string except `trusted()`, reserved for constants of this
 * module (never for data).
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Renderable = Html | string | number | boolean | null | undefined | readonly Renderable[];

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

function render(v: Renderable): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return (v as readonly Renderable[]).map(render).join("");
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** A constant of the dashboard's own code (e.g. the doctype). Never pass request or database data here. */
export function trusted(constant: string): Html {
  return new Html(constant);
}

export function join(items: readonly Renderable[], sep: Renderable = ""): Html {
  return new Html(items.map(render).join(render(sep)));
}
