/** Log-in page, store picker and the error page. */
import type { StoreRecord } from "../../../actors/store/schemas.ts";
import { html, type Html } from "../html.ts";
import { badge, page } from "../layout.ts";
import type { DashboardSession } from "../session.ts";

export function loginPage(opts: { token: string; next: string; email?: string; error?: string }): Html {
  return page({
    title: "Log in",
    body: html`<div class="login card">
<h1>Log in</h1>
<p class="hint">Use the account that owns your store.</p>
${opts.error ? html`<div class="flash error" role="alert" id="login-error">${opts.error}</div>` : ""}
<form method="post" action="/dashboard/login"${opts.error ? html` aria-describedby="login-error"` : ""}>
<input type="hidden" name="_csrf" value="${opts.token}">
<input type="hidden" name="next" value="${opts.next}">
<label for="email">E-mail</label>
<input id="email" type="email" name="email" autocomplete="username" required value="${opts.email ?? ""}" data-autofocus>
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<p><button type="submit">Log in</button></p>
</form></div>`,
  });
}

export function pickerPage(session: DashboardSession, stores: readonly StoreRecord[]): Html {
  return page({
    title: "Choose a store",
    session,
    body: html`<h1>Choose a store</h1>
${stores.length === 0 ? html`<p>Your account owns no store yet.</p>` : ""}
<ul class="plain grid">${stores.map(
      (s) => html`<li class="card"><h2><a href="/dashboard/s/${s.slug}">${s.name}</a></h2>
<p class="muted">${s.slug} · ${s.verificationLevel} · ${s.currency}</p>
<p>${badge(s.operationalStatus)} ${s.trustScore === null ? badge("not scored", "warn") : html`<span>trust ${s.trustScore.toFixed(2)}</span>`}</p></li>`,
    )}</ul>`,
  });
}

export function errorPage(session: DashboardSession | null, status: number, title: string, message: string): Html {
  return page({
    title,
    session,
    body: html`<h1>${title}</h1><p>${message}</p><p><a href="/dashboard">Back to the dashboard</a></p><p class="muted">HTTP ${status}</p>`,
  });
}
