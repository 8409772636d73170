import type { CpuProfileJSON, TimingJSON } from '../core/types.js';
import { shortPlace } from '../analysis/cpu-source.js';
import { escapeHtml, msText, num } from './html.js';

/**
 * The CPU section of a sampled request's page: what was sampled, a link to the `.cpuprofile`
 * (Chrome DevTools, speedscope), and an icicle chart of the samples: the call tree from the top,
 * each function as wide as the time spent in it and below it. Inline SVG with presentation
 * attributes and classes only, so it draws under the pages' `default-src 'none'` without script;
 * each box says its function, place and time in a `<title>` (shown on hover).
 *
 * Everything is read from a stored profile, which may hold anything: the samples are checked
 * before use (readCpuProfile), every string is escaped, and the drawing is bounded (MAX_BOXES,
 * MAX_DEPTH; boxes under 0.1% of the width are left out).
 */

const WIDTH = 1000;
const ROW = 16;
const MAX_DEPTH = 48;
const MAX_BOXES = 1500;
/** Characters that fit in a box, per viewBox unit (11-unit monospace text is about 6.6 units a character). */
const PER_CHAR = 6.6;
const IDLE = '(idle)';

type Node = CpuProfileJSON['nodes'][number];

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The samples if `x` has the `.cpuprofile` shape the chart reads, else null. */
export function readCpuProfile(x: unknown): CpuProfileJSON | null {
  if (x === null || typeof x !== 'object') return null;
  const p = x as Record<string, unknown>;
  if (!Array.isArray(p.nodes) || !Array.isArray(p.samples) || !Array.isArray(p.timeDeltas) || !isNum(p.startTime) || !isNum(p.endTime)) return null;
  for (const n of p.nodes as unknown[]) {
    const o = n as Node | null;
    if (o === null || typeof o !== 'object' || !isNum(o.id) || o.callFrame === null || typeof o.callFrame !== 'object') return null;
    const cf = o.callFrame;
    if (typeof cf.functionName !== 'string' || typeof cf.url !== 'string' || !isNum(cf.lineNumber)) return null;
    if (o.children !== undefined && (!Array.isArray(o.children) || !o.children.every(isNum))) return null;
  }
  if (!(p.samples as unknown[]).every(isNum) || !(p.timeDeltas as unknown[]).every(isNum)) return null;
  return x as CpuProfileJSON;
}

interface Box {
  node: Node;
  /** Time in the node and below it, ms. */
  total: number;
  kids: Box[];
}

/** The call tree with each node's total time (each sample weighs the gap to the next one). */
function tree(p: CpuProfileJSON): Box | null {
  const self = new Map<number, number>();
  const n = p.samples.length;
  for (let i = 0; i < n; i++) {
    const w = Math.max(0, (i + 1 < n ? p.timeDeltas[i + 1]! : 0) / 1000);
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + w);
  }
  const byId = new Map<number, Node>();
  for (const node of p.nodes) byId.set(node.id, node);
  const root = p.nodes[0];
  if (root === undefined) return null;
  // Iterative post-order over an explicit stack; a node seen twice (a malformed tree) is skipped.
  const seen = new Set<number>();
  const boxes = new Map<number, Box>();
  const stack: [Node, boolean][] = [[root, false]];
  while (stack.length > 0) {
    const [node, done] = stack.pop()!;
    if (done) {
      const kids: Box[] = [];
      let total = node.callFrame.functionName === IDLE ? 0 : (self.get(node.id) ?? 0);
      for (const c of node.children ?? []) {
        const b = boxes.get(c);
        if (b !== undefined && b.total > 0) {
          kids.push(b);
          total += b.total;
        }
      }
      kids.sort((a, b) => b.total - a.total);
      boxes.set(node.id, { node, total, kids });
      continue;
    }
    if (seen.has(node.id)) continue;
    seen.add(node.id);
    stack.push([node, true]);
    for (const c of node.children ?? []) {
      const k = byId.get(c);
      if (k !== undefined && !seen.has(k.id)) stack.push([k, false]);
    }
  }
  return boxes.get(root.id) ?? null;
}

/** The colour class of a box: the app's code, a package, Node's own, V8's (GC, native). */
function kind(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'f-gc';
  if (url === '') return 'f-v8';
  if (url.startsWith('node:')) return 'f-node';
  return url.includes('/node_modules/') ? 'f-pkg' : 'f-app';
}

function label(node: Node, cwd: string): { name: string; place: string } {
  const cf = node.callFrame;
  const name = cf.functionName === '' ? '(anonymous)' : cf.functionName;
  return { name, place: shortPlace({ fn: name, url: cf.url, line: cf.lineNumber >= 0 ? cf.lineNumber + 1 : 0 }, cwd) };
}

/** The icicle chart, or '' when there is nothing to draw. */
export function icicle(p: CpuProfileJSON, cwd = process.cwd()): string {
  const root = tree(p);
  if (root === null || root.total <= 0) return '';
  const scale = WIDTH / root.total;
  let out = '';
  let boxes = 0;
  let depth = 0;
  // Breadth-first, one row per depth: [box, x].
  let level: [Box, number][] = [[root, 0]];
  while (level.length > 0 && depth < MAX_DEPTH && boxes < MAX_BOXES) {
    const next: [Box, number][] = [];
    for (const [b, x] of level) {
      const w = b.total * scale;
      if (w < 1 || boxes >= MAX_BOXES) continue;
      boxes++;
      const { name, place } = label(b.node, cwd);
      const pct = (b.total / root.total) * 100;
      const tip = `${name}${place === '' ? '' : ` ${place}`}: ${msText(b.total)} (${pct.toFixed(1)}%)`;
      const y = depth * ROW;
      out += `<g class="${kind(b.node.callFrame.url, b.node.callFrame.functionName)}"><title>${escapeHtml(tip)}</title>`;
      out += `<rect x="${num(x)}" y="${y}" width="${num(w)}" height="${ROW - 1}"/>`;
      const chars = Math.floor((w - 4) / PER_CHAR);
      if (chars >= 3) {
        const text = name.length > chars ? `${name.slice(0, chars - 1)}…` : name;
        out += `<text x="${num(x + 2)}" y="${y + 11}">${escapeHtml(text)}</text>`;
      }
      out += '</g>';
      let at = x;
      for (const k of b.kids) {
        next.push([k, at]);
        at += k.total * scale;
      }
    }
    level = next;
    depth++;
  }
  const height = depth * ROW;
  return `<svg class="flame" viewBox="0 0 ${WIDTH} ${height}" width="100%" role="img" aria-label="CPU samples by function">${out}</svg>`;
}

/** The styles of the section (appended to the pages' stylesheet: no inline style under the CSP). */
export const FLAME_CSS = `svg.flame{display:block;font:11px ui-monospace,SFMono-Regular,Menlo,monospace;margin:8px 0}
svg.flame rect{stroke:#fff;stroke-width:.5}svg.flame text{fill:#1f2328;pointer-events:none}
g.f-app rect{fill:#f4a261}g.f-pkg rect{fill:#e9c46a}g.f-node rect{fill:#a8dadc}g.f-v8 rect{fill:#d0d7de}g.f-gc rect{fill:#e76f51}
g:hover rect{fill-opacity:.75}p.cpu{color:#57606a}
table.cpu{margin:4px 0 8px}table.cpu .place{color:#57606a;font-size:12px}
`;

/**
 * The steps that held the CPU, each with its top functions by self time (the step line's `cpu:`
 * in the text), in tree order. Read defensively: a stored profile may hold anything.
 */
function stepsTable(root: TimingJSON, cwd: string): string {
  let rows = '';
  const stack: TimingJSON[] = [root];
  let n = 0;
  while (stack.length > 0 && n < MAX_DEPTH * 8) {
    const t = stack.pop()!;
    if (!Array.isArray(t.children)) continue;
    for (let i = t.children.length - 1; i >= 0; i--) stack.push(t.children[i]!);
    const c = t.cpu as { ms?: unknown; sharedMs?: unknown; top?: unknown } | undefined;
    if (c === undefined || c === null || typeof c !== 'object' || !Array.isArray(c.top) || !isNum(c.ms)) continue;
    n++;
    const fns = (c.top as { fn?: unknown; url?: unknown; line?: unknown; ms?: unknown }[])
      .filter((f) => f !== null && typeof f === 'object' && typeof f.fn === 'string' && typeof f.url === 'string' && isNum(f.ms))
      .map((f) => {
        const place = shortPlace({ fn: f.fn as string, url: f.url as string, line: isNum(f.line) ? f.line : 0 }, cwd);
        return `<code>${escapeHtml(f.fn as string)}</code>${place === '' ? '' : ` <span class="place">${escapeHtml(place)}</span>`} ${escapeHtml(msText(f.ms as number))}`;
      })
      .join('<br>');
    const gc = isNum(t.gcMs) && t.gcMs > 0 ? `GC ${escapeHtml(msText(t.gcMs))}` : '';
    const shared = isNum(c.sharedMs) && c.sharedMs > 0 ? `${escapeHtml(msText(c.sharedMs))} shared` : '';
    rows += `<tr><td>${escapeHtml(String(t.name))}</td><td class="num">${escapeHtml(msText(c.ms))}</td><td>${fns}</td><td>${[gc, shared].filter((x) => x !== '').join(', ')}</td></tr>`;
  }
  if (rows === '') return '';
  return `<table class="cpu"><thead><tr><th>Step</th><th class="num">CPU</th><th>Top functions (self time)</th><th>Also</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** The profile's `cpu` as the page shows it: facts, the download link, the steps that held the CPU, the chart. */
export function cpuSection(cpu: unknown, href: string, root?: TimingJSON): string {
  if (cpu === null || typeof cpu !== 'object') return '';
  const c = cpu as { ms?: unknown; intervalUs?: unknown; sharedMs?: unknown; profile?: unknown; note?: unknown };
  let out = '<h2 id="cpu">CPU samples</h2><p class="cpu">';
  out += isNum(c.ms) ? `${escapeHtml(msText(c.ms))} on the CPU` : 'Sampled';
  if (isNum(c.intervalUs)) out += `, a sample every ${escapeHtml(String(c.intervalUs))} µs`;
  if (isNum(c.sharedMs) && c.sharedMs > 0) out += `; ${escapeHtml(msText(c.sharedMs))} of it while other requests were in flight`;
  const samples = readCpuProfile(c.profile);
  if (samples !== null && href !== '') out += ` · <a href="${href}.cpuprofile" download>download .cpuprofile</a> (Chrome DevTools, speedscope)`;
  out += '.</p>';
  if (typeof c.note === 'string') out += `<p class="cpu">${escapeHtml(c.note)}</p>`;
  if (root !== undefined) out += stepsTable(root, process.cwd());
  if (samples !== null) out += icicle(samples);
  return out;
}
