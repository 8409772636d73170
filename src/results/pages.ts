import type { ProfileJSON } from '../core/types.js';
import { traceLink } from '../core/trace.js';
import { escapeHtml, jsonForScript, msText } from './html.js';
import { FLAGS, summarize, UUID, type ProfileSummary } from './store.js';
import { bars, folds, markHtml, marksOf, rows, scaleOf, type Fold, type Mark, type Row } from './timeline.js';
import { readProfile } from './view.js';
import { cpuSection, FLAME_CSS } from './flame.js';
import { unionMs } from '../analysis/wall.js';

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

/**
 * The list's headers: the same, except that a form may go back to this origin (`form-action
 * 'none'` also stops a GET form, and the list's filter is one).
 */
export const LIST_HEADERS = {
  ...PAGE_HEADERS,
  'Content-Security-Policy': "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
} as const;

const DEPTHS = 24;

/** Below this width the tables turn each row into a small grid (the 420 px phone case). */
const NARROW = 640;

/** The stylesheet, served from the base path (CSP `style-src 'self'`: no inline style anywhere). */
export const CSS = `:root{color-scheme:light}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;background:#fff;margin:0;padding:16px 24px}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
h1{font-size:20px;margin:8px 0 4px;overflow-wrap:anywhere}h2{font-size:16px;margin:24px 0 8px}
nav{font-size:13px;color:#57606a}
.method{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;color:#57606a;margin-right:6px}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 20px;margin:8px 0}dl.facts div{display:flex;gap:6px}
dt{color:#57606a}dd{margin:0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;color:#57606a;font-size:12px}.num{text-align:right;white-space:nowrap}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.flag{display:inline-block;font-size:11px;line-height:16px;padding:0 6px;border-radius:8px;background:#eaeef2;margin:1px 4px 1px 0;white-space:nowrap}
.flag.error,.flag.aborted,.flag.malformed{background:#ffebe9;color:#a40e26}
.flag.duplicate,.flag.similar,.flag.n1,.flag.n\\+1{background:#fff1e5;color:#953800}
.flag.blocking{background:#fff8c5;color:#7d4e00}.flag.serialized{background:#fbefff;color:#8250df}
.cat{color:#8250df;margin-right:6px;font-size:12px}tr.error td.name{color:#a40e26}
p.error{color:#a40e26}ul.warnings{color:#953800}ul.problems{color:#a40e26}
script{display:none}
table.steps,table.profiles{width:100%}
table.steps{table-layout:fixed}
col.c-bar{width:28%}col.c-self,col.c-total{width:5.8em}col.c-marks{width:13em}
td.name{overflow-wrap:anywhere}
td.bar{padding-top:6px;padding-bottom:6px}svg.bar{display:block;background:#f6f8fa}
rect.b-step{fill:#0969da}rect.b-custom{fill:#8250df}rect.b-similar{fill:#bc4c00}rect.b-duplicate{fill:#953800}
rect.b-error{fill:#cf222e}rect.b-blocking{fill:#9a6700}rect.b-serialized{fill:#6639ba}
code.cmd{white-space:pre-wrap;overflow-wrap:anywhere;display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:3;line-clamp:3;overflow:hidden}
code.shape{white-space:pre-wrap;overflow-wrap:anywhere}
code.cmd:hover,code.cmd:focus{-webkit-line-clamp:unset;line-clamp:none;overflow:visible}
summary{cursor:pointer}summary .count{font-weight:600;margin-right:4px}
tr.fold-head td{background:#f6f8fa}.range{font-size:11px;color:#57606a;margin-right:4px;white-space:nowrap}
tbody.fold:has(details:not([open])) tr.member{display:none}
tr.member td{background:#fcfcfd}
th.bar .axis{font-weight:400;margin-left:6px}
time{white-space:nowrap}
form.filter{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:end;margin:8px 0 12px}
form.filter label{display:flex;flex-direction:column;font-size:12px;color:#57606a;gap:2px}
form.filter input,form.filter select,form.filter button{font:inherit;font-size:13px;padding:3px 6px;max-width:100%}
td.path{overflow-wrap:anywhere}
${Array.from({ length: DEPTHS }, (_, d) => `td.name.d${d}{padding-left:${8 + d * 14}px}`).join('')}
@media (max-width:${NARROW}px){
body{padding:8px 10px}
table.steps,table.steps thead,table.steps tbody,table.profiles,table.profiles thead,table.profiles tbody{display:block;width:100%}
table.steps tr{display:grid;grid-template-columns:minmax(0,1fr) auto auto;border-bottom:1px solid #eaeef2}
table.steps td,table.steps th,table.profiles td,table.profiles th{border-bottom:0}
table.steps td.name,table.steps td.marks,table.steps th.name,table.steps th.marks{grid-column:1/-1}
table.steps td.marks:empty,table.steps th.marks{display:none}
table.steps td.bar{align-self:center}
table.profiles thead{display:none}
table.profiles tr{display:grid;grid-template-columns:repeat(5,auto);justify-content:start;gap:0 6px;border-bottom:1px solid #eaeef2;padding:4px 0}
table.profiles td{padding:1px 4px}
table.profiles td.path,table.profiles td.flags{grid-column:1/-1}
table.profiles td.flags:empty{display:none}
table.profiles td[data-label]::before{content:attr(data-label) " ";color:#57606a;font-size:11px}
${Array.from({ length: DEPTHS }, (_, d) => `td.name.d${d}{padding-left:${4 + d * 8}px}`).join('')}
}
${FLAME_CSS}`;

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

/** What the list shows: the profiles whose path contains `path` and that carry `flag`. */
export interface ListFilter {
  /** A substring of the request path, compared case-insensitively; '' for any. */
  path: string;
  /** One of FLAGS, or '' for any. */
  flag: string;
}

export const NO_FILTER: ListFilter = { path: '', flag: '' };

/** The longest path filter taken from a query string. */
export const MAX_PATH_FILTER = 200;

/**
 * The list's filter from its query string, and what was wrong with it. Values are checked, never
 * trusted: an unknown flag or an overlong path is dropped and named in `problems`.
 */
export function parseFilter(query: string): { filter: ListFilter; problems: string[] } {
  const q = new URLSearchParams(query);
  const problems: string[] = [];
  let path = q.get('path') ?? '';
  let flag = q.get('flag') ?? '';
  if (path.length > MAX_PATH_FILTER) {
    problems.push(`The path filter is longer than ${MAX_PATH_FILTER} characters: showing every path.`);
    path = '';
  }
  if (flag !== '' && !FLAGS.includes(flag as (typeof FLAGS)[number])) {
    problems.push(`“${flag.slice(0, 40)}” is not a flag: showing every profile.`);
    flag = '';
  }
  return { filter: { path, flag }, problems };
}

/** Whether `s` passes `f`. */
export function matches(s: ProfileSummary, f: ListFilter): boolean {
  if (f.flag !== '' && !s.flags.includes(f.flag)) return false;
  return f.path === '' || s.path.toLowerCase().includes(f.path.toLowerCase());
}

/**
 * A list row read back from a store, checked field by field (a shared store is not trusted); null
 * when it is not a summary.
 */
export function readSummary(x: unknown): ProfileSummary | null {
  if (x === null || typeof x !== 'object' || Array.isArray(x)) return null;
  const o = x as Record<string, unknown>;
  const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  if (typeof o.id !== 'string' || typeof o.started !== 'string' || typeof o.method !== 'string' || typeof o.path !== 'string') return null;
  if (!isNum(o.savedAt) || !isNum(o.durationMs) || !isNum(o.steps) || !isNum(o.custom)) return null;
  if (o.status !== undefined && !isNum(o.status)) return null;
  if (!Array.isArray(o.flags) || !o.flags.every((f) => typeof f === 'string')) return null;
  const out: ProfileSummary = { id: o.id, started: o.started, savedAt: o.savedAt, method: o.method, path: o.path, durationMs: o.durationMs, steps: o.steps, custom: o.custom, flags: o.flags as string[] };
  if (o.status !== undefined) out.status = o.status as number;
  if (typeof o.label === 'string') out.label = o.label;
  return out;
}

/** "3 s ago", "5 min ago", "2 h ago", "4 d ago"; "just now" under a second or for a clock ahead of ours. */
export function ago(now: number, iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.floor((now - t) / 1000);
  if (s < 1) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** Which list a list page shows: the developer's own (the default) or the captured requests. */
export interface ListView {
  title: string;
  /** Where the rows' profiles are served: `base`, or `base/captured`. */
  path: string;
  /**
   * Where this list itself is served, for the filter form and its links: `path` unless set
   * (`base/captured/slowest` keeps its order when filtered).
   */
  list?: string;
  /** More links for the nav: our own HTML, no user text. */
  nav: string;
  empty: string;
}

export interface ListOptions {
  /** Epoch ms the relative times count from. */
  now: number;
  filter: ListFilter;
  /** Lines about a query string that was not taken as given. */
  problems: readonly string[];
  /** Default: the developer's own recent profiles. */
  view?: ListView;
}

/**
 * `base/`: this developer's recent profiles, newest first, with a filter form (a plain GET back to
 * this page). `base` is the validated base path (only `[A-Za-z0-9/_.~-]`); an id that is not a
 * UUID gets no link, so no stored text ever reaches an attribute unescaped.
 */
export function renderListPage(list: readonly unknown[], base: string, optIn: 'in' | 'out' | null, o: ListOptions = { now: Date.now(), filter: NO_FILTER, problems: [] }): string {
  const v = o.view ?? { title: 'Recent profiles', path: base, nav: '', empty: 'No profiles yet. Make a request as a developer, then reload.' };
  let body = `<nav>miniprof${optIn === 'in' ? ` · opted in · <a href="${base}/opt-out">opt out</a>` : optIn === 'out' ? ` · <a href="${base}/opt-in">opt in</a>` : ''}${v.nav}</nav>`;
  body += `<h1>${escapeHtml(v.title)}</h1>`;
  body += filterForm(v.list ?? v.path, o.filter);
  if (o.problems.length > 0) body += `<ul class="problems">${o.problems.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul>`;
  const filtered = o.filter.path !== '' || o.filter.flag !== '';
  if (list.length === 0) {
    const none = filtered ? `<p>No recent profile matches. <a href="${v.list ?? v.path}/">Show all</a>.</p>` : `<p>${escapeHtml(v.empty)}</p>`;
    return page(`miniprof: ${v.title.toLowerCase()}`, base, body + none);
  }
  body +=
    '<table class="profiles"><thead><tr><th>Request</th><th>When</th><th class="num">Status</th><th class="num">Duration</th>' +
    '<th class="num">Steps</th><th class="num">Custom</th><th>Flags</th></tr></thead><tbody>';
  for (const x of list) {
    const s = readSummary(x);
    if (s === null) {
      body += '<tr class="malformed"><td class="path" colspan="7"><span class="flag malformed">malformed</span> a stored list row that is not a profile summary</td></tr>';
      continue;
    }
    const label = `<span class="method">${escapeHtml(s.method)}</span>${escapeHtml(s.path)}`;
    const link = UUID.test(s.id) ? `<a href="${v.path}/${s.id}">${label}</a>` : label;
    body +=
      `<tr><td class="path">${link}${s.label === undefined ? '' : ` <span class="flag label">${escapeHtml(s.label)}</span>`}</td>` +
      `<td><time datetime="${escapeHtml(s.started)}" title="${escapeHtml(s.started)}">${escapeHtml(ago(o.now, s.started) || s.started)}</time></td>` +
      `<td class="num" data-label="status">${escapeHtml(s.status === undefined ? '' : String(s.status))}</td>` +
      `<td class="num">${escapeHtml(msText(s.durationMs))}</td>` +
      `<td class="num" data-label="steps">${escapeHtml(String(s.steps))}</td><td class="num" data-label="custom">${escapeHtml(String(s.custom))}</td>` +
      `<td class="flags">${flags(s.flags)}</td></tr>`;
  }
  return page(`miniprof: ${v.title.toLowerCase()}`, base, body + '</tbody></table>');
}

function filterForm(base: string, f: ListFilter): string {
  let out = `<form class="filter" method="get" action="${base}/" role="search">`;
  out += `<label>Path contains<input type="search" name="path" value="${escapeHtml(f.path)}" maxlength="${MAX_PATH_FILTER}" placeholder="/users"></label>`;
  out += '<label>Flag<select name="flag"><option value="">any</option>';
  for (const flag of FLAGS) out += `<option value="${escapeHtml(flag)}"${flag === f.flag ? ' selected' : ''}>${escapeHtml(flag)}</option>`;
  out += '</select></label><button type="submit">Filter</button>';
  if (f.path !== '' || f.flag !== '') out += ` <a href="${base}/">clear</a>`;
  return out + '</form>';
}

/**
 * `base/:id`: facts, then one table that is both the timeline and the tree (bar, name, self time,
 * total, marks), runs of similar rows folded behind a `<details>`, the N+1 groups, warnings, and
 * the JSON as a data block. `id` is the UUID from the URL: the stored profile's own `id` never
 * reaches an attribute. A stored profile that is not v1 JSON renders as one error line.
 */
export function renderProfilePage(stored: unknown, base: string, id: string, path = base): string {
  const href = UUID.test(id) ? id : '';
  const nav = `<nav><a href="${path}/">← ${path === base ? 'recent profiles' : 'captured requests'}</a>${href === '' ? '' : ` · <a href="${path}/${href}.json">JSON</a>`}</nav>`;
  const read = readProfile(stored);
  if (!read.ok) {
    const body = `${nav}<h1>Profile ${escapeHtml(href)}</h1><p class="error">This stored profile cannot be shown: ${escapeHtml(read.error)}.</p>`;
    return page('miniprof: malformed profile', base, body);
  }
  const p = read.profile;
  const s = summarize(p, 0);
  let body = nav;
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
  if (p.miniprofMs !== undefined) body += fact('miniprof\'s own time', msText(p.miniprofMs));
  if (typeof p.traceId === 'string') body += traceFact(p.traceId);
  body += `</dl><p>${flags(s.flags)}</p>`;
  body += stepsTable(p);
  if (p.cpu !== undefined) body += cpuSection(p.cpu, href === '' ? '' : `${path}/${href}`, p.root);
  if (p.similar !== undefined && p.similar.length > 0) body += similarTable(p.similar);
  if (p.warnings.length > 0) {
    body += '<h2>Warnings</h2><ul class="warnings">';
    for (const w of p.warnings) body += `<li>${escapeHtml(w)}</li>`;
    body += '</ul>';
  }
  body += `<script type="application/json" id="miniprof-profile">${jsonForScript(p)}</script>`;
  return page(`miniprof: ${s.method} ${s.path}`, base, body);
}

/** The trace id, linked to the tracing backend when miniprof/otel's `traceUrl` gives a page for it. */
function traceFact(traceId: string): string {
  const url = traceLink(traceId);
  const id = escapeHtml(traceId);
  return url === undefined ? `<div><dt>Trace</dt><dd>${id}</dd></div>` : `<div><dt>Trace</dt><dd><a href="${escapeHtml(url)}" rel="noreferrer">${id}</a></dd></div>`;
}

function fact(name: string, value: string): string {
  return `<div><dt>${name}</dt><dd>${escapeHtml(value)}</dd></div>`;
}

function label(r: Row): string {
  if (r.kind === 'step') return escapeHtml(r.name);
  const cmd = escapeHtml(r.name);
  return `<span class="cat">${escapeHtml(r.category)}</span> <code class="cmd" tabindex="0" title="${cmd}">${cmd}</code>`;
}

function rowHtml(r: Row, scale: number, cls: string): string {
  const d = Math.min(r.depth, DEPTHS - 1);
  return (
    `<tr class="${r.kind}${r.error ? ' error' : ''}${cls}"><td class="name d${d}">${label(r)}</td>` +
    `<td class="bar">${bars([r], scale)}</td><td class="num">${escapeHtml(msText(r.selfMs))}</td>` +
    `<td class="num">${escapeHtml(msText(r.durationMs))}</td><td class="marks">${markHtml(marksOf(r))}</td></tr>`
  );
}

/** The head of a fold: `12 × select … where author_id = ?`, the members' bars, their total and range. */
function foldHead(p: ProfileJSON, list: readonly Row[], f: Fold, scale: number): string {
  const heads = f.heads.map((i) => list[i]!);
  const first = heads[0]!;
  const d = Math.min(first.depth, DEPTHS - 1);
  let name = escapeHtml(first.name);
  if (first.kind === 'custom') {
    // The group's masked shape names them all; members may differ in their values.
    const g = p.similar?.find((x) => x.id === first.similar && x.category === first.category);
    const shape = escapeHtml(g?.command ?? first.name);
    name = `<span class="cat">${escapeHtml(first.category)}</span> <code class="shape" title="${shape}">${shape}</code>`;
  }
  // The wall time (the union of the members' intervals) under Total, as every row's is: ten
  // parallel 8 ms calls took 8 ms of their parent's time, not 80. The sum only labelled as one.
  const pairs: number[] = [];
  let sum = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const h of heads) {
    pairs.push(h.startMs, h.startMs + h.durationMs);
    sum += h.durationMs;
    lo = Math.min(lo, h.durationMs);
    hi = Math.max(hi, h.durationMs);
  }
  const wall = unionMs(pairs, Infinity);
  const range = lo === hi ? `${msText(lo)} each` : `${msText(lo)}–${msText(hi)} each`;
  const summed = heads.length > 1 && Math.abs(sum - wall) >= 0.05 ? `<span class="range" title="their durations added up">${escapeHtml(msText(sum))} summed</span>` : '';
  return (
    `<tr class="fold-head ${first.kind}"><td class="name d${d}"><details><summary><span class="count">${heads.length} ×</span> ${name}</summary></details></td>` +
    `<td class="bar">${bars(heads, scale)}</td><td class="num"></td><td class="num">${escapeHtml(msText(wall))}</td>` +
    `<td class="marks"><span class="range">${escapeHtml(range)}</span>${summed}${markHtml(merged(heads))}</td></tr>`
  );
}

/** The members' marks, each once, with how many members carry it when not all do. */
function merged(heads: readonly Row[]): Mark[] {
  const seen = new Map<string, { mark: Mark; n: number }>();
  for (const h of heads) {
    for (const m of marksOf(h)) {
      const e = seen.get(m.text);
      if (e === undefined) seen.set(m.text, { mark: m, n: 1 });
      else e.n++;
    }
  }
  return [...seen.values()].map(({ mark, n }) => (n === heads.length ? mark : { cls: mark.cls, text: `${mark.text} (${n})` }));
}

/** The combined timeline and tree. Folded runs get a tbody of their own, so CSS can hide their members. */
function stepsTable(p: ProfileJSON): string {
  const list = rows(p);
  const scale = scaleOf(list);
  const span = scale > 0 ? 1000 / scale : 0;
  let out =
    '<table class="steps"><colgroup><col class="c-name"><col class="c-bar"><col class="c-self"><col class="c-total"><col class="c-marks"></colgroup>' +
    `<thead><tr><th class="name">Step</th><th class="bar">Timeline<span class="axis">0–${escapeHtml(msText(span))}</span></th>` +
    '<th class="num">Self</th><th class="num">Total</th><th class="marks">Marks</th></tr></thead>';
  let i = 0;
  let open = false;
  for (const f of folds(list)) {
    if (i < f.start) {
      out += '<tbody>';
      for (; i < f.start; i++) out += rowHtml(list[i]!, scale, '');
      out += '</tbody>';
    }
    out += `<tbody class="fold">${foldHead(p, list, f, scale)}`;
    for (; i < f.end; i++) out += rowHtml(list[i]!, scale, ' member');
    out += '</tbody>';
  }
  if (i < list.length) {
    open = true;
    out += '<tbody>';
    for (; i < list.length; i++) out += rowHtml(list[i]!, scale, '');
  }
  return out + (open ? '</tbody>' : '') + '</table>';
}

/** Groups of similar commands (the N+1 shape): the masked command, how often, how long in all. */
function similarTable(groups: NonNullable<ProfileJSON['similar']>): string {
  let out = '<h2>Similar commands (N+1)</h2><table class="similar"><thead><tr><th class="num">#</th><th>Command</th><th class="num">Count</th><th class="num">Total</th></tr></thead><tbody>';
  for (const g of groups) {
    out += `<tr><td class="num">${escapeHtml(String(g.id))}</td><td class="name"><span class="cat">${escapeHtml(g.category)}</span> <code class="shape">${escapeHtml(g.command)}</code></td><td class="num">${escapeHtml(String(g.count))}</td><td class="num">${escapeHtml(msText(g.durationMs))}</td></tr>`;
  }
  return out + '</tbody></table>';
}
