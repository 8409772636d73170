/**
 * One meaning of "duplicate" everywhere (issue 47.3): same category, same command AND the same
 * values. A parameterised N+1 (values differ) is similar, never duplicate. The five outputs of one
 * profile (the HTML comment, Server-Timing, the JSON, the profile page and the list) must agree
 * on which custom timings are duplicates and which are similar.
 */
import express from 'express';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import { afterEach, expect, test } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { memoryStore, renderHtmlComment, renderServerTiming, step, timing, type ProfileJSON, type ProfileStore } from '../src/index.js';
import { renderListPage, renderProfilePage } from '../src/results/pages.js';
import { summarize } from '../src/results/store.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';

afterEach(closeServers);

type Node = DefaultTreeAdapterMap['childNode'] | DefaultTreeAdapterMap['document'];
type Verdict = { duplicate: boolean; similar: number | undefined };

const attr = (n: Node, name: string) => ('attrs' in n ? n.attrs.find((a) => a.name === name)?.value : undefined);
const text = (n: Node): string => (n.nodeName === '#text' ? (n as { value: string }).value : 'childNodes' in n ? n.childNodes.map((c) => text(c as Node)).join('') : '');
function all(n: Node, keep: (n: Node) => boolean, out: Node[] = []): Node[] {
  if (keep(n)) out.push(n);
  if ('childNodes' in n) for (const c of n.childNodes) all(c as Node, keep, out);
  return out;
}

/** The JSON's verdicts, custom timings in tree order (a step's own timings, then its children). */
function fromJson(p: ProfileJSON): Verdict[] {
  const out: Verdict[] = [];
  const walk = (t: ProfileJSON['root']) => {
    for (const c of t.custom ?? []) out.push({ duplicate: c.duplicate === true, similar: c.similar });
    t.children.forEach(walk);
  };
  walk(p.root);
  return out;
}

/** The comment's: each `[category] command = …ms` line with its `(duplicate)` and `(similar #N)`. */
function fromComment(comment: string): Verdict[] {
  return comment
    .split('\n')
    .filter((l) => /^>+ \[/.test(l))
    .map((l) => ({ duplicate: l.includes(' (duplicate)'), similar: /\(similar #(\d+)\)/.exec(l) === null ? undefined : Number(/\(similar #(\d+)\)/.exec(l)![1]) }));
}

/**
 * The page's: every custom-timing row of the steps table (members of folds included), in the
 * table's order, which is start order within a step. The app starts a step's timings before its
 * children and in sequence, so that is the comment's order too.
 */
function fromPage(html: string): Verdict[] {
  const rows = all(parse(html) as Node, (n) => 'tagName' in n && n.tagName === 'tr' && /^custom\b/.test(attr(n, 'class') ?? ''));
  return rows.map((tr) => {
    const marks = all(tr, (n) => 'tagName' in n && /\bflag\b/.test(attr(n, 'class') ?? '')).map(text);
    const s = marks.map((m) => /^similar #(\d+)$/.exec(m)).find((m) => m !== null);
    return { duplicate: marks.includes('duplicate'), similar: s == null ? undefined : Number(s[1]) };
  });
}

async function profileOf(route: (app: express.Express) => void): Promise<ProfileJSON> {
  const inner = memoryStore();
  const saved: string[] = [];
  const store: ProfileStore = { ...inner, save: async (o, p) => (await inner.save(o, p), void saved.push(p.id)) };
  const app = express();
  app.use(miniprof({ isDeveloper: () => true, results: { store } }));
  route(app);
  const port = await serve(app);
  const r = await raw(port, { path: '/page' });
  const id = r.headers['x-miniprof-id']![0]!;
  await waitFor(() => saved.includes(id));
  return JSON.parse((await raw(port, { path: `/_miniprof/${id}.json` })).payload.toString()) as ProfileJSON;
}

/** Render all five from `p` and check them against each other. */
function agree(p: ProfileJSON): { verdicts: Verdict[]; flags: string[]; header: string } {
  const verdicts = fromJson(p);
  expect(fromComment(renderHtmlComment(p))).toEqual(verdicts);
  expect(fromPage(renderProfilePage(p, '/_miniprof', p.id))).toEqual(verdicts);
  const list = renderListPage([summarize(p, 0)], '/_miniprof', null, { now: 0, filter: { path: '', flag: '' }, problems: [] });
  const row = all(parse(list) as Node, (n) => 'tagName' in n && n.tagName === 'tbody')[0]!;
  const flags = all(row, (n) => 'tagName' in n && /\bflag\b/.test(attr(n, 'class') ?? '')).map(text);
  expect(flags.includes('duplicate')).toBe(verdicts.some((v) => v.duplicate));
  expect(flags.includes('n+1')).toBe(verdicts.some((v) => v.similar !== undefined));
  // The JSON's own summary and the comment's summary line count the same timings.
  const sql = p.customSummary!.find((s) => s.category === 'sql')!;
  expect(sql.duplicate).toBe(verdicts.filter((v) => v.duplicate).length);
  expect(sql.similar).toBe(verdicts.filter((v) => v.similar !== undefined).length);
  const line = renderHtmlComment(p).split('\n').find((l) => l.startsWith('[sql] '))!;
  expect(/, (\d+) duplicate/.exec(line)?.[1] ?? '0').toBe(String(sql.duplicate));
  expect(/, (\d+) similar/.exec(line)?.[1] ?? '0').toBe(String(sql.similar));
  // Server-Timing carries category counts, never commands: it counts the same timings, and it
  // never claims a duplicate the JSON does not have.
  const header = renderServerTiming(p);
  const metric = header.split(', ').find((m) => m.startsWith('sql;'))!;
  expect(metric).toMatch(new RegExp(`desc="sql \\(${sql.count}\\b`));
  const dup = /(\d+) duplicate/.exec(metric);
  if (dup !== null) expect(Number(dup[1])).toBe(sql.duplicate);
  else expect(header).not.toMatch(/dup/i);
  return { verdicts, flags, header };
}

test('a parameterised N+1 is similar everywhere and a duplicate nowhere', async () => {
  const p = await profileOf((app) =>
    app.get('/page', async (_req, res) => {
      await step('load posts', async () => {
        for (let i = 0; i < 12; i++) await timing('sql', `select * from posts where author_id = ${100 + i}`, async () => {});
      });
      res.type('html').send('<!doctype html><html><body>ok</body></html>');
    }),
  );
  const { verdicts, flags } = agree(p);
  expect(verdicts).toHaveLength(12);
  expect(verdicts.every((v) => !v.duplicate && v.similar === 1)).toBe(true);
  expect(flags.filter((f) => f === 'duplicate' || f === 'n+1')).toEqual(['n+1']);
});

test('the same query with the same values is duplicate (and similar) everywhere; the other rows are neither', async () => {
  const p = await profileOf((app) =>
    app.get('/page', async (_req, res) => {
      await timing('sql', 'select * from settings where user_id = 42', async () => {});
      await step('load posts', async () => {
        for (let i = 0; i < 3; i++) await timing('sql', `select * from posts where author_id = ${100 + i}`, async () => {});
        await timing('sql', 'select * from settings where user_id = 42', async () => {});
        await timing('sql', 'select * from settings where user_id = 43', async () => {});
        await timing('sql', 'select count(*) from tags', async () => {});
      });
      res.type('html').send('<!doctype html><html><body>ok</body></html>');
    }),
  );
  const { verdicts, flags } = agree(p);
  const settings = verdicts[0]!.similar;
  const posts = verdicts[1]!.similar;
  expect(settings).not.toBe(posts);
  expect(verdicts).toEqual([
    { duplicate: true, similar: settings },
    { duplicate: false, similar: posts },
    { duplicate: false, similar: posts },
    { duplicate: false, similar: posts },
    { duplicate: true, similar: settings },
    { duplicate: false, similar: settings },
    { duplicate: false, similar: undefined },
  ]);
  expect(flags.filter((f) => f === 'duplicate' || f === 'n+1')).toEqual(['duplicate', 'n+1']);
});
