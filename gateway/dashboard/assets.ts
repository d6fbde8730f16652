/**
 * The dashboard's only static files, served from memory with a content hash in the URL (long-lived cache):
 * a small responsive stylesheet (visible focus, phone layout) and an optional progressive-enhancement script
 * (confirm before destructive actions, copy the one-time secret). Every page works without the script.
 */
import { createHash } from "node:crypto";

export const CSS = `
:root{--fg:#1d2630;--muted:#4a5561;--bg:#f5f7f9;--card:#fff;--line:#d8dde3;--accent:#1f5fbf;--accent-dark:#174a96;--ok:#1b7f3b;--warn:#8a5300;--bad:#b00020;--focus:#ffbf47}
*{box-sizing:border-box}
html{font-size:100%}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);line-height:1.45}
a{color:var(--accent)}
a:hover{color:var(--accent-dark)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:var(--card);padding:.5rem 1rem;z-index:10}
.skip:focus{left:.5rem}
header.top{background:#16324f;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem}
header.top a{color:#fff}
header.top .brand{font-weight:700;text-decoration:none;margin-right:auto}
header.top form{margin:0}
header.top .who{font-size:.9rem;opacity:.9}
nav.main{background:var(--card);border-bottom:1px solid var(--line);overflow-x:auto}
nav.main ul{list-style:none;margin:0 auto;padding:0 1rem;display:flex;gap:.25rem;max-width:72rem}
nav.main a{display:block;padding:.7rem .8rem;text-decoration:none;color:var(--fg);border-bottom:3px solid transparent;white-space:nowrap}
nav.main a[aria-current=page]{border-bottom-color:var(--accent);font-weight:600}
main{max-width:72rem;margin:0 auto;padding:1rem;overflow-wrap:anywhere}
.tools{columns:2 20rem;column-gap:1.5rem}
.tools legend{column-span:all}
.tools label{break-inside:avoid}
h1{font-size:1.5rem;margin:.4rem 0 1rem}
h2{font-size:1.15rem;margin:0 0 .6rem}
h3{font-size:1rem;margin:.8rem 0 .4rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem;margin:0 0 1rem}
.grid{display:grid;gap:1rem;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr))}
.stats{display:grid;gap:.75rem;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));margin:0}
.stats div{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.7rem}
.stats dt{font-size:.8rem;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
.stats dd{margin:.2rem 0 0;font-size:1.3rem;font-weight:600}
.big{font-size:2.2rem;font-weight:700}
.chart{width:100%;height:auto;display:block}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.93rem}
caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
th{font-size:.8rem;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
td.num,th.num{text-align:right;white-space:nowrap}
.badge{display:inline-block;padding:.05rem .45rem;border-radius:999px;font-size:.78rem;border:1px solid var(--line);background:#eef1f4;margin:0 .2rem .2rem 0;white-space:nowrap}
.badge.ok{background:#e3f4e8;border-color:#9fd3ae;color:#14572a}
.badge.warn{background:#fff3dc;border-color:#f0c36d;color:var(--warn)}
.badge.bad{background:#fde7ea;border-color:#f3a6b1;color:var(--bad)}
.flash{border-radius:8px;padding:.7rem 1rem;margin:0 0 1rem;border:1px solid}
.flash.ok{background:#e3f4e8;border-color:#9fd3ae}
.flash.error{background:#fde7ea;border-color:#f3a6b1}
.secret{background:#fff8e1;border:2px solid #f0c36d;border-radius:8px;padding:1rem;margin:0 0 1rem}
.secret code{display:block;word-break:break-all;font-size:1rem;background:#fff;padding:.5rem;border:1px solid var(--line);margin:.5rem 0}
label{display:block;font-weight:600;margin:.6rem 0 .2rem}
label.inline,fieldset label{display:flex;align-items:center;gap:.4rem;font-weight:400;margin:.3rem 0}
fieldset{border:1px solid var(--line);border-radius:8px;margin:.6rem 0;padding:.5rem .8rem}
legend{font-weight:600;padding:0 .3rem}
input[type=text],input[type=email],input[type=password],input[type=url],input[type=number],input[type=datetime-local],select,textarea{font:inherit;width:100%;max-width:32rem;padding:.45rem .5rem;border:1px solid #8895a3;border-radius:6px;background:#fff;color:var(--fg)}
input[type=checkbox],input[type=radio]{width:1.1rem;height:1.1rem}
.hint{color:var(--muted);font-size:.88rem;margin:.2rem 0}
button,.button{font:inherit;display:inline-block;padding:.45rem .9rem;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;text-decoration:none;min-height:2.4rem}
button:hover,.button:hover{background:var(--accent-dark);color:#fff}
button.secondary{background:#fff;color:var(--accent)}
button.secondary:hover{background:#eef3fb;color:var(--accent-dark)}
button.danger{background:#fff;color:var(--bad);border-color:var(--bad)}
button.danger:hover{background:#fde7ea}
header.top button{background:transparent;border-color:#fff;color:#fff;min-height:2rem;padding:.25rem .7rem}
.actions{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin:.3rem 0 .8rem}
td .actions{margin:0}
.actions form{margin:0}
.row{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end}
.row>div{flex:1 1 12rem}
ul.plain{list-style:none;padding:0;margin:0}
ol.history{padding-left:1.2rem;margin:0}
ol.history li{margin:.3rem 0}
.muted{color:var(--muted)}
.login{max-width:26rem;margin:3rem auto}
.pager{display:flex;gap:1rem;align-items:center;margin:.6rem 0}
.visually-hidden{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:40rem){
 main{padding:.6rem}
 nav.main ul{flex-wrap:wrap;padding:0 .3rem}
 nav.main a{padding:.55rem .6rem}
 h1{font-size:1.25rem}
 .card{padding:.7rem}
 table.stack thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
 table.stack tr{display:block;border-bottom:2px solid var(--line);padding:.3rem 0}
 table.stack td{display:flex;gap:.5rem;border:0;padding:.2rem .3rem}
 table.stack td::before{content:attr(data-label);font-weight:600;min-width:7rem;color:var(--muted)}
 table.stack td.num{text-align:left}
}
@media (prefers-reduced-motion:no-preference){button{transition:background .12s}}
`;

export const JS = `
(function(){
  document.addEventListener('submit', function(e){
    var f = e.target; var msg = f.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  });
  document.querySelectorAll('[data-copy]').forEach(function(b){
    b.hidden = false;
    b.addEventListener('click', function(){
      var el = document.getElementById(b.getAttribute('data-copy'));
      if (!el || !navigator.clipboard) return;
      navigator.clipboard.writeText(el.textContent.trim()).then(function(){ b.textContent = 'Copied'; });
    });
  });
  var focus = document.querySelector('[data-autofocus]'); if (focus) focus.focus();
})();
`;

const hash = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 12);
export const CSS_PATH = `/dashboard/assets/app.${hash(CSS)}.css`;
export const JS_PATH = `/dashboard/assets/app.${hash(JS)}.js`;
