/**
 * Connected apps (audit X-1): the signed-in user's OAuth credentials, beside the REST routes of gateway/oauth/manage.ts.
 * The grants the user gave MCP clients on the consent page (revocable here), and the clients the user registered
 * with a session (deletable here). A client's secret is replaced through the API (POST
 * /api/v1/oauth/clients/{client_id}/secret), which shows it once to the program that will hold it.
 */
import type { OAuthClientView, OAuthGrantView } from "../../oauth/manage.ts";
import { html, type Html } from "../html.ts";
import { badge, page, postForm, when } from "../layout.ts";
import type { DashboardSession, Flash } from "../session.ts";

export const CONNECTED_APPS_PATH = "/dashboard/connected-apps";

export function connectedAppsPage(session: DashboardSession, d: { grants: readonly OAuthGrantView[]; clients: readonly OAuthClientView[] }, flash: Flash | null): Html {
  const csrf = session.csrfToken;
  return page({
    title: "Connected apps",
    session,
    flash,
    body: html`<p><a href="/dashboard?switch=1">← Stores</a></p><h1>Connected apps</h1>
<section class="card" aria-labelledby="grants-h"><h2 id="grants-h">Apps you authorized</h2>
<p class="hint">Agents you allowed on the consent page to act for you on a store's MCP endpoint. Revoking one stops it at once; it must ask you again. An authorization ends by itself 90 days after you gave it.</p>
${d.grants.length === 0 ? html`<p>No app holds an authorization from you.</p>` : ""}
${d.grants.length
  ? html`<div class="table-wrap"><table class="stack"><caption class="visually-hidden">Apps you authorized</caption><thead><tr><th>App</th><th>Scopes</th><th>Endpoint</th><th>Last refreshed</th><th>Ends</th><th>Action</th></tr></thead><tbody>
${d.grants.map(
  (g) => html`<tr><td data-label="App">${g.clientName || g.clientId}</td><td data-label="Scopes">${g.scopes.map((x) => badge(x, ""))}</td><td data-label="Endpoint"><code>${g.resource}</code></td>
<td data-label="Last refreshed">${when(g.refreshedAt)}</td><td data-label="Ends">${when(g.grantExpiresAt ?? g.expiresAt)}</td>
<td data-label="Action">${postForm(`${CONNECTED_APPS_PATH}/grants/${g.id}/revoke`, csrf, html`<button type="submit" class="danger" aria-label="Revoke ${g.clientName || g.clientId}">Revoke</button>`, { confirm: "Revoke this app's access? It stops working at once." })}</td></tr>`,
)}
</tbody></table></div>`
  : ""}
</section>
<section class="card" aria-labelledby="clients-h"><h2 id="clients-h">OAuth clients you registered</h2>
<p class="hint">Clients registered with your session (<code>POST /api/v1/oauth/register</code>); a <code>client_credentials</code> client acts for you. Deleting one stops its secret, its tokens and the authorizations users gave it, at once.</p>
${d.clients.length === 0 ? html`<p>You registered no OAuth client.</p>` : ""}
${d.clients.map(
  (c) => html`<section class="card" aria-labelledby="client-${c.clientId}"><h3 id="client-${c.clientId}">${c.clientName || c.clientId}</h3>
<p><code>${c.clientId}</code> · ${c.grantTypes.map((x) => badge(x, ""))} · ${c.tokenEndpointAuthMethod} · registered ${when(c.createdAt)} · ${c.lastUsedAt ? html`last used ${when(c.lastUsedAt)}` : "never used"}</p>
${postForm(`${CONNECTED_APPS_PATH}/clients/${encodeURIComponent(c.clientId)}/delete`, csrf, html`<button type="submit" class="danger" aria-label="Delete client ${c.clientName || c.clientId}">Delete client</button>`, { confirm: "Delete this client? Its secret and every token it holds stop working at once." })}
</section>`,
)}
</section>`,
  });
}
