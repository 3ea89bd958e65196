import { createHash } from 'node:crypto';

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

// One inline stylesheet, allowed by its hash in the CSP: no third-party or external assets at all.
const css = `
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f3f4f6;color:#111827}
main{max-width:24rem;margin:8vh auto;padding:2rem;background:#fff;border-radius:.75rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
@media (max-width:30rem){main{margin:0;min-height:100vh;border-radius:0;box-shadow:none}}
h1{font-size:1.35rem;margin:0 0 .25rem}p.sub{margin:0 0 1.5rem;color:#4b5563}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=text],input[type=password]{width:100%;padding:.65rem .75rem;font-size:1rem;border:1px solid #d1d5db;border-radius:.5rem}
input:focus{outline:2px solid #2563eb;border-color:#2563eb}
button{width:100%;margin-top:1.5rem;padding:.7rem;font-size:1rem;font-weight:600;border:0;border-radius:.5rem;background:#2563eb;color:#fff;cursor:pointer}
button.secondary{background:#e5e7eb;color:#111827;margin-top:.5rem}
.error{background:#fef2f2;color:#991b1b;border:1px solid #fecaca;padding:.6rem .75rem;border-radius:.5rem}
ul.scopes{padding-left:1.25rem}code{background:#f3f4f6;padding:.1rem .3rem;border-radius:.25rem}
.qr svg{display:block;width:12rem;height:12rem;margin:1rem auto}.secret{word-break:break-all;font-size:1.05rem}
ul.codes{list-style:none;padding:0;display:grid;grid-template-columns:repeat(2,1fr);gap:.4rem}ul.codes code{font-size:1.05rem}
table.factors{width:100%;border-collapse:collapse}table.factors td{padding:.4rem 0;border-bottom:1px solid #e5e7eb}
section{margin-top:1.5rem}h2{font-size:1.1rem;margin:0 0 .5rem}a{color:#1d4ed8}
ul.apps{list-style:none;padding:0;margin:0}ul.apps a{display:block;margin:.5rem 0;padding:.9rem 1rem;min-height:3rem;border:1px solid #d1d5db;border-radius:.5rem;background:#f9fafb;font-weight:600;text-decoration:none;overflow-wrap:anywhere}ul.apps a:hover{background:#eff6ff}`;

export const styleHash = `'sha256-${createHash('sha256').update(css).digest('base64')}'`;

export function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Latchkey</title><style>${css}</style></head>
<body><main>${body}</main></body></html>`;
}

export const hidden = (fields: Record<string, string>): string =>
  Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join('');

export const errorBox = (message?: string) => (message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : '');
