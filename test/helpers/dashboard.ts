/** Shared set-up of the dashboard tests: a merchant's logged-in session and its CSRF token, through the real forms. */
import { merchantLogin } from "./agents.ts";
import type { TestServer } from "./server.ts";

export interface DashboardSession {
  /** The session cookie (name=value) after logging in. */
  cookie: string;
  /** The CSRF token of the logged-in session's forms. */
  csrf: string;
  /** The pre-login cookie the log-in form's CSRF token belongs to. */
  loginCookie: string;
}

/** Logs in as `store`'s owner through the log-in form and reads the CSRF token of the dashboard's forms. */
export async function dashboardSession(srv: TestServer, store: string): Promise<DashboardSession> {
  const page = await srv.fetch("/dashboard/login");
  const loginCookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const who = merchantLogin(store);
  const lr = await srv.fetch("/dashboard/login", {
    method: "POST",
    redirect: "manual",
    headers: { cookie: loginCookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: token, email: who.email, password: who.password, next: "/dashboard" }),
  });
  const cookie = lr.headers.get("set-cookie")!.split(";")[0]!;
  const home = await srv.fetch("/dashboard?switch=1", { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await home.text())![1]!;
  return { cookie, csrf, loginCookie };
}
