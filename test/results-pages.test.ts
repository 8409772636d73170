/**
 * The results pages' parts, exactly: relative times, the list filter read from a query string
 * (checked and escaped for any input: fast-check + parse5), the rows of the combined table (self
 * time, folds that cover every row once), and the marks read from the analysis fields.
 */
import fc from 'fast-check';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import { describe, expect, test } from 'vitest';
import type { ProfileJSON, TimingJSON } from '../src/index.js';
import { ago, parseFilter, renderListPage, renderProfilePage } from '../src/results/pages.js';
import { summarize } from '../src/results/store.js';
import { folds, marksOf, rows } from '../src/results/timeline.js';
import { readProfile } from '../src/results/view.js';

const NOW = Date.parse('2026-12-01T12:00:00.000Z');

test('relative times', () => {
  const at = (ms: number) => ago(NOW, new Date(NOW - ms).toISOString());
  expect([at(-5000), at(0), at(999), at(1000), at(59_999), at(60_000), at(3_599_999), at(3_600_000), at(86_399_999), at(86_400_000), at(9 * 86_400_000)]).toEqual([
    'just now',
    'just now',
    'just now',
    '1 s ago',
    '59 s ago',
    '1 min ago',
    '59 min ago',
    '1 h ago',
    '23 h ago',
    '1 d ago',
    '9 d ago',
  ]);
  expect(ago(NOW, 'not a date')).toBe('');
});

describe('the list filter', () => {
  test('query parameters taken as given when valid; an unknown flag or an overlong path is dropped and said', () => {
    expect(parseFilter('')).toEqual({ filter: { path: '', flag: '' }, problems: [] });
    expect(parseFilter('path=%2Fusers&flag=n%2B1')).toEqual({ filter: { path: '/users', flag: 'n+1' }, problems: [] });
    expect(parseFilter('flag=serialized&flag=error')).toEqual({ filter: { path: '', flag: 'serialized' }, problems: [] });
    expect(parseFilter('flag=duplicates')).toEqual({ filter: { path: '', flag: '' }, problems: ['“duplicates” is not a flag: showing every profile.'] });
    expect(parseFilter(`path=${'a'.repeat(201)}`)).toEqual({ filter: { path: '', flag: '' }, problems: ['The path filter is longer than 200 characters: showing every path.'] });
  });

  const row = (path: string, flags: string[]) =>
    summarize(
      {
        v: 1,
        id: '00000000-0000-4000-8000-00000000000' + (path.length % 10),
        name: path,
        machine: 'm',
        started: '2026-12-01T11:59:57.000Z',
        durationMs: 3,
        droppedSteps: flags.includes('dropped') ? 1 : 0,
        warnings: [],
        request: { method: 'GET', path, status: 200 },
        root: { name: path, startMs: 0, durationMs: 3, children: [] },
      },
      0,
    );

  test('the list page: relative time in a <time> with the ISO time, the form filled with the filter', () => {
    const html = renderListPage([row('/users/1', [])], '/_miniprof', null, { now: NOW, filter: { path: '/users', flag: 'dropped' }, problems: [] });
    expect(html).toContain('<time datetime="2026-12-01T11:59:57.000Z" title="2026-12-01T11:59:57.000Z">3 s ago</time>');
    expect(html).toContain('<form class="filter" method="get" action="/_miniprof/" role="search">');
    expect(html).toContain('name="path" value="/users"');
    expect(html).toContain('<option value="dropped" selected>dropped</option>');
    expect(html).toContain('<a href="/_miniprof/">clear</a>');
  });

  type Node = DefaultTreeAdapterMap['childNode'] | DefaultTreeAdapterMap['document'];
  const skeleton = (html: string): string[] => {
    const out: string[] = [];
    const walk = (n: Node) => {
      if ('tagName' in n) out.push(`${n.tagName}[${n.attrs.map((a) => (a.name === 'value' ? 'value=*' : `${a.name}=${a.value}`)).join(' ')}]`);
      if ('childNodes' in n) for (const c of n.childNodes) walk(c as Node);
    };
    walk(parse(html) as Node);
    return out;
  };
  const inputValue = (html: string): string => {
    let v = '';
    const walk = (n: Node) => {
      if ('tagName' in n && n.tagName === 'input') v = n.attrs.find((a) => a.name === 'value')!.value;
      if ('childNodes' in n) for (const c of n.childNodes) walk(c as Node);
    };
    walk(parse(html) as Node);
    return v;
  };

  test('any query string: the page has the structure of a harmless one, and the path comes back in the form as given', () => {
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.constantFrom('"><script>alert(1)</script>', "' autofocus onfocus='alert(1)", '</option><img src=x>', '&quot;', 'n+1', 'error'));
    fc.assert(
      fc.property(text, text, (path, flag) => {
        const query = new URLSearchParams({ path, flag }).toString();
        const { filter, problems } = parseFilter(query);
        const html = renderListPage([row('/a', [])], '/_miniprof', 'in', { now: NOW, filter, problems });
        const harmless = parseFilter(new URLSearchParams({ path: filter.path === '' ? '' : 'x', flag: filter.flag }).toString());
        const plain = renderListPage([row('/a', [])], '/_miniprof', 'in', { now: NOW, filter: harmless.filter, problems: problems.map(() => 'p') });
        expect(skeleton(html)).toEqual(skeleton(plain));
        // The parser's own preprocessing aside (CR LF to LF, NUL), what was typed comes back.
        expect(inputValue(html)).toBe(filter.path.replace(/\r\n?/g, '\n').replace(/\0/g, '\ufffd'));
      }),
      { numRuns: 300 },
    );
  });
});

const step = (name: string, startMs: number, durationMs: number, children: TimingJSON[] = [], extra: Partial<TimingJSON> = {}): TimingJSON => ({ name, startMs, durationMs, children, ...extra });
const prof = (root: TimingJSON, extra: Partial<ProfileJSON> = {}): ProfileJSON => ({ v: 1, id: '00000000-0000-4000-8000-000000000000', name: 'GET /', machine: 'm', started: '2026-12-01T12:00:00.000Z', durationMs: root.durationMs, droppedSteps: 0, warnings: [], root, ...extra });

describe('rows of the combined table', () => {
  test('self time: the step less the union of its children (parallel children counted once), clipped to the step', () => {
    const p = prof(step('root', 0, 100, [step('a', 10, 30), step('b', 20, 30), step('c', 90, 50)]));
    expect(rows(p).map((r) => [r.name, r.selfMs])).toEqual([
      ['root', 100 - 40 - 10],
      ['a', 30],
      ['b', 30],
      ['c', 50],
    ]);
  });

  test('folds: runs of same-named siblings (with their subtrees) and of one similar group; every row in at most one', () => {
    const sql = (i: number, similar?: number) => ({ category: 'sql', command: `q${similar ?? i}`, startMs: i, durationMs: 1, ...(similar === undefined ? {} : { similar }) });
    const p = prof(
      step('root', 0, 100, [step('load', 10, 5, [step('inner', 10, 1)]), step('load', 20, 5), step('load', 30, 5), step('other', 40, 5), step('load', 50, 5)], {
        custom: [sql(1, 1), sql(2, 1), sql(3, 1), sql(4), sql(5, 2)],
      }),
    );
    const list = rows(p);
    expect(list.map((r) => `${r.depth}:${r.name}`)).toEqual(['0:root', '1:q1', '1:q1', '1:q1', '1:q4', '1:q2', '1:load', '2:inner', '1:load', '1:load', '1:other', '1:load']);
    expect(folds(list)).toEqual([
      { start: 1, end: 4, heads: [1, 2, 3] },
      { start: 6, end: 10, heads: [6, 8, 9] },
    ]);
  });

  test('marks from the analysis fields: blocking sync and held, ambiguous, serialized naming its group, concurrency', () => {
    const texts = (t: TimingJSON) => marksOf(rows(prof(t))[0]!).map((m) => `${m.text}${m.title === undefined ? '' : ` | ${m.title}`}`);
    expect(texts(step('a', 0, 30, [], { blocking: true, syncMs: 25 }))).toEqual(['blocking 25.0 ms | held the event loop for 25.0 ms before its first await']);
    expect(texts(step('a', 0, 80, [], { blocking: true, heldMs: 56.2 } as Partial<TimingJSON>))).toEqual(['blocking 56.2 ms | held the event loop for 56.2 ms after an await']);
    expect(texts(step('a', 0, 80, [], { blocking: true, syncMs: 21, heldMs: 56.2, blockingAmbiguous: true } as Partial<TimingJSON>))).toEqual([
      'blocking? 21.0 ms + 56.2 ms | the loop was held for 56.2 ms while this and other steps or requests were running: any of them may have held it',
    ]);
    const kids = [0, 1, 2, 3, 4].map((i) => step('load user', 0, 10 * (i + 1)));
    // Stored by an older version with both: the fan-out's verdict is the one said (issue 59 item 2).
    expect(texts(step('a', 0, 50, kids, { parallelism: 3, concurrency: 1.04, serialized: true, fanOut: { name: 'load user', count: 5 } } as Partial<TimingJSON>))).toEqual([
      'serialized ×5 | 5 × load user ran one at a time; concurrency 1.0',
    ]);
    expect(texts(step('a', 0, 50, kids, { parallelism: 3 }))).toEqual(['parallel ×3.0']);
    // Without the fanOut the group is counted from the children.
    expect(texts(step('a', 0, 50, kids, { concurrency: 1.04, serialized: true }))).toEqual(['serialized ×5 | concurrency 1.0']);
    expect(texts(step('a', 0, 50, kids, { concurrency: 2.04, fanOut: { name: 'q', count: 3, category: 'sql', similar: 1 } } as Partial<TimingJSON>))).toEqual(['×2.0 at once | 3 × [sql] q; concurrency 2.0']);
  });

  test('the list flags: serialized, duplicate and n+1 apart, from the JSON’s own fields', () => {
    const sql = (command: string, extra: object) => ({ category: 'sql', command, startMs: 1, durationMs: 1, ...extra });
    const kids = [0, 1, 2].map((i) => step('load user', 0, 10 * (i + 1)));
    const serialized = prof(step('root', 0, 50, [step('fan', 0, 40, kids, { concurrency: 1.1, serialized: true })]));
    expect(summarize(serialized, 0).flags).toEqual(['serialized']);
    const similar = prof(step('root', 0, 50, [], { custom: [sql('q ?', { similar: 1 }), sql('q ?', { similar: 1 })] }));
    expect(summarize(similar, 0).flags).toEqual(['n+1']);
    const both = prof(step('root', 0, 50, [], { custom: [sql('q 1', { similar: 1, duplicate: true }), sql('q 1', { similar: 1, duplicate: true })] }));
    expect(summarize(both, 0).flags).toEqual(['duplicate', 'n+1']);
    // Equal masked text alone is not a duplicate: only the JSON's flag says so.
    const masked = prof(step('root', 0, 50, [], { custom: [sql('q ?', {}), sql('q ?', {})] }));
    expect(summarize(masked, 0).flags).toEqual([]);
  });

  test('readProfile names the first wrong field; renderProfilePage shows it as one line', () => {
    const bad = prof(step('root', 0, 1, [step('a', 0, 1, [step('b', 0, '1' as unknown as number)])]));
    expect(readProfile(bad)).toEqual({ ok: false, error: 'profile.root.children[0].children[0].durationMs is not a number' });
    expect(readProfile([])).toEqual({ ok: false, error: 'the profile is not an object' });
    expect(renderProfilePage(bad, '/_miniprof', bad.id)).toContain('<p class="error">This stored profile cannot be shown: profile.root.children[0].children[0].durationMs is not a number.</p>');
    expect(summarize(bad, 5)).toEqual({ id: bad.id, started: bad.started, savedAt: 5, method: '', path: 'GET /', durationMs: 0, steps: 0, custom: 0, flags: ['malformed'] });
  });
});
