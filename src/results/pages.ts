import type { ProfileJSON } from '../core/types.js';
import { escapeHtml, jsonForScript, msText } from './html.js';
import { summarize, type ProfileSummary } from './store.js';
import { renderTimeline, rows } from './timeline.js';

/**
 * Headers of every results response. No script may run and nothing but our own stylesheet may
 * load; the pages are private to one developer and must never be cached or sniffed.
 */
export const PAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'private, no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
} as const;

const DEPTHS = 24;

/** The stylesheet, served from the base path (CSP `style-src 'self'`: no inline style anywhere). */
export const CSS = `:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;background:#fff;margin:0;padding:16px 24px}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
h1{font-size:20px;margin:8px 0 4px;word-break:break-all}h2{font-size:16px;margin:24px 0 8px}
nav{font-size:13px;color:#57606a}
.method{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;color:#57606a;margin-right:6px}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 20px;margin:8px 0}dl.facts div{display:flex;gap:6px}
dt{color:#57606a}dd{margin:0;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:3px 10px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;color:#57606a;font-size:12px}td.num,th.num{text-align:right}
td.name{word-break:break-all;max-width:640px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;white-space:pre-wrap;word-break:break-all}
.flag{display:inline-block;font-size:11px;padding:0 6px;border-radius:8px;background:#eaeef2;margin:0 4px 0 0}td.name .flag{margin-left:6px}
.flag.error,.flag.aborted{background:#ffebe9;color:#a40e26}.flag.duplicates,.flag.duplicate,.flag.similar,.flag.n\\+1{background:#fff1e5;color:#953800}
.flag.blocking{background:#fff8c5;color:#7d4e00}
.cat{color:#8250df;margin-right:4px}tr.error td{color:#a40e26}
.timeline-wrap{overflow-x:auto}svg.timeline{display:block}
ul.warnings{color:#953800}
script{display:none}
${Array.from({ length: DEPTHS }, (_, d) => `td.name.d${d}{padding-left:${10 + d * 14}px}`).join('')}
`;

function page(title: string, base: string, body: string): string {
  return (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)}</title>` +
    `<link rel="stylesheet" href="${base}/miniprof.css">` +
    `</head><body>${body}</body></html>\n`
  );
}

function flags(list: readonly string[]): string {
  // Flags come from a store, which may be shared: escaped like everything else read back.
  return list.map((f) => `<span class="flag ${escapeHtml(f)}">${escapeHtml(f)}</span>`).join('');
}

/** Which list a list page shows: the developer's own (the default) or the captured requests. */
export interface ListView {
  title: string;
  /** Where the rows' profiles are served: `base`, or `base/captured`. */
  path: string;
  /** More links for the nav: our own HTML, no user text. */
  nav: string;
  empty: string;
}

/**
 * `base/`: this developer's recent profiles, newest first (or another list, by `view`). `base` is
 * the validated base path (only `[A-Za-z0-9/_.~-]`), ids are UUIDs: no user text ever reaches an
 * attribute.
 */
export function renderListPage(list: readonly ProfileSummary[], base: string, optIn: 'in' | 'out' | null, view?: ListView): string {
  const v = view ?? { title: 'Recent profiles', path: base, nav: '', empty: 'No profiles yet. Make a request as a developer, then reload.' };
  let body = `<nav>miniprof${optIn === 'in' ? ` · opted in · <a href="${base}/opt-out">opt out</a>` : optIn === 'out' ? ` · <a href="${base}/opt-in">opt in</a>` : ''}${v.nav}</nav>`;
  body += `<h1>${escapeHtml(v.title)}</h1>`;
  const title = `miniprof: ${v.title.toLowerCase()}`;
  if (list.length === 0) return page(title, base, body + `<p>${escapeHtml(v.empty)}</p>`);
  body += '<table class="profiles"><thead><tr><th>Time</th><th>Method</th><th>Path</th><th class="num">Status</th><th class="num">Duration</th><th class="num">Steps</th><th class="num">Custom</th><th>Flags</th></tr></thead><tbody>';
  for (const s of list) {
    body +=
      `<tr><td><a href="${v.path}/${s.id}">${escapeHtml(s.started)}</a></td>` +
      `<td>${escapeHtml(s.method)}</td><td class="name"><a href="${v.path}/${s.id}">${escapeHtml(s.path)}</a>${s.label === undefined ? '' : ` <span class="flag">${escapeHtml(s.label)}</span>`}</td>` +
      `<td class="num">${escapeHtml(String(s.status ?? ''))}</td><td class="num">${escapeHtml(msText(s.durationMs))}</td>` +
      `<td class="num">${escapeHtml(String(s.steps))}</td><td class="num">${escapeHtml(String(s.custom))}</td><td>${flags(s.flags)}</td></tr>`;
  }
  return page(title, base, body + '</tbody></table>');
}

/**
 * `base/:id`: facts, the timeline, the tree as a table, warnings, and the JSON as a data block.
 * `path`: where the profile is served (`base/captured` for a captured one).
 */
export function renderProfilePage(p: ProfileJSON, base: string, path = base): string {
  const s = summarize(p, 0);
  let body = `<nav><a href="${path}/">← ${path === base ? 'recent profiles' : 'captured requests'}</a> · <a href="${path}/${p.id}.json">JSON</a></nav>`;
  body += `<h1><span class="method">${escapeHtml(s.method)}</span>${escapeHtml(s.path)}</h1>`;
  body += '<dl class="facts">';
  body += fact('Status', s.status === undefined ? '' : String(s.status));
  body += fact('Duration', msText(p.durationMs));
  body += fact('Started', p.started);
  body += fact('Machine', p.machine);
  if (typeof p.request?.label === 'string') body += fact('Label', p.request.label);
  body += fact('Steps', String(s.steps));
  body += fact('Custom timings', String(s.custom));
  if (p.droppedSteps > 0) body += fact('Not recorded', String(p.droppedSteps));
  if (p.eventLoopDelayMs !== undefined) body += fact('Event-loop delay', msText(p.eventLoopDelayMs));
  body += `</dl><p>${flags(s.flags)}</p>`;
  body += `<h2>Timeline</h2><div class="timeline-wrap">${renderTimeline(p)}</div>`;
  body += `<h2>Tree</h2>${tree(p)}`;
  if (p.similar !== undefined && p.similar.length > 0) body += similarTable(p.similar);
  if (p.warnings.length > 0) {
    body += '<h2>Warnings</h2><ul class="warnings">';
    for (const w of p.warnings) body += `<li>${escapeHtml(w)}</li>`;
    body += '</ul>';
  }
  body += `<script type="application/json" id="miniprof-profile">${jsonForScript(p)}</script>`;
  return page(`miniprof: ${s.method} ${s.path}`, base, body);
}

function fact(name: string, value: string): string {
  return `<div><dt>${name}</dt><dd>${escapeHtml(value)}</dd></div>`;
}

function tree(p: ProfileJSON): string {
  let out = '<table class="tree"><thead><tr><th>Step</th><th class="num">Start</th><th class="num">Duration</th></tr></thead><tbody>';
  for (const r of rows(p)) {
    const d = Math.min(r.depth, DEPTHS - 1);
    const cls = `${r.kind}${r.error ? ' error' : ''}`;
    const marks =
      (r.error ? '<span class="flag error">error</span>' : '') +
      (r.blocking ? '<span class="flag blocking">blocking</span>' : '') +
      (r.duplicate ? '<span class="flag duplicate">duplicate</span>' : '') +
      (r.similar !== undefined ? `<span class="flag similar">similar #${escapeHtml(String(r.similar))}</span>` : '') +
      (r.parallelism !== undefined ? `<span class="flag">parallel ×${escapeHtml(String(r.parallelism))}</span>` : '') +
      (r.unfinished ? '<span class="flag">unfinished</span>' : '');
    const label =
      r.kind === 'custom' ? `<code>${escapeHtml(r.label)}</code>` : escapeHtml(r.label);
    out += `<tr class="${cls}"><td class="name d${d}">${label}${marks}</td><td class="num">${escapeHtml(msText(r.startMs))}</td><td class="num">${escapeHtml(msText(r.durationMs))}</td></tr>`;
  }
  return out + '</tbody></table>';
}

/** Groups of similar commands (the N+1 shape): the masked command, how often, how long in all. */
function similarTable(groups: NonNullable<ProfileJSON['similar']>): string {
  let out = '<h2>Similar commands (N+1)</h2><table class="similar"><thead><tr><th class="num">#</th><th>Command</th><th class="num">Count</th><th class="num">Total</th></tr></thead><tbody>';
  for (const g of groups) {
    out += `<tr><td class="num">${escapeHtml(String(g.id))}</td><td class="name"><code>[${escapeHtml(g.category)}] ${escapeHtml(g.command)}</code></td><td class="num">${escapeHtml(String(g.count))}</td><td class="num">${escapeHtml(msText(g.durationMs))}</td></tr>`;
  }
  return out + '</tbody></table>';
}
