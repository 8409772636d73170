import { IncomingMessage, ServerResponse, validateHeaderValue } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { renderServerTiming, step, timing, withProfile, type ProfileJSON, type TimingJSON } from '../src/index.js';
import { MIN_MAX_BYTES, token } from '../src/render/server-timing.js';
import { ms1 } from '../src/render/format.js';
import { closeProfile, runInProfile } from '../src/core/context.js';
import { resolveCore } from '../src/core/options.js';
import { Profile } from '../src/core/profile.js';
import { fakeClock, fixed } from './helpers/clock.js';

interface Metric {
  name: string;
  duration: number;
  /** undefined when the metric has no `desc` param. */
  description: string | undefined;
}

/** RFC 9110 token characters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const WS = /^[ \t]+|[ \t]+$/g;

/**
 * Fetch's "get, decode, and split" for one header value: split on commas that are not inside a
 * quoted string, strip whitespace from each piece.
 */
function split(value: string): string[] {
  const out: string[] = [];
  let pos = 0;
  let cur = '';
  while (pos < value.length) {
    const ch = value[pos]!;
    if (ch === '"') {
      const q = collectQuoted(value, { pos }, false);
      cur += q.value;
      pos = q.end;
    } else if (ch === ',') {
      out.push(cur.replace(WS, ''));
      cur = '';
      pos++;
    } else {
      cur += ch;
      pos++;
    }
  }
  out.push(cur.replace(WS, ''));
  return out;
}

/** Fetch's "collect an HTTP quoted string" starting at a `"`. */
function collectQuoted(s: string, at: { pos: number }, extract: boolean): { value: string; end: number } {
  let pos = at.pos;
  let value = '';
  pos++; // the opening quote
  for (;;) {
    const start = pos;
    while (pos < s.length && s[pos] !== '"' && s[pos] !== '\\') pos++;
    value += s.slice(start, pos);
    if (pos >= s.length) break;
    const q = s[pos]!;
    pos++;
    if (q === '\\') {
      if (pos >= s.length) {
        value += '\\';
        break;
      }
      value += s[pos]!;
      pos++;
    } else break; // closing quote
  }
  return { value: extract ? value : s.slice(at.pos, pos), end: pos };
}

/** "Parse a server-timing header field" (W3C Server Timing), one list member. */
function parseMetric(field: string): Metric | null {
  let pos = 0;
  const upTo = (stop: string): string => {
    const start = pos;
    while (pos < field.length && field[pos] !== stop) pos++;
    return field.slice(start, pos);
  };
  const name = upTo(';').replace(WS, '');
  if (name === '') return null;
  const params = new Map<string, string>();
  while (pos < field.length) {
    pos++; // `;`
    const paramName = upTo('=').replace(WS, '');
    if (paramName === '' || params.has(paramName)) {
      upTo(';');
      continue;
    }
    pos++; // `=`
    while (pos < field.length && (field[pos] === ' ' || field[pos] === '\t')) pos++;
    let paramValue: string;
    if (field[pos] === '"') {
      const q = collectQuoted(field, { pos }, true);
      paramValue = q.value;
      pos = q.end;
      upTo(';');
    } else paramValue = upTo(';').replace(WS, '');
    params.set(paramName, paramValue);
  }
  let duration = 0;
  const dur = params.get('dur');
  if (dur !== undefined) {
    // HTML's rules for parsing floating-point numbers, for the numbers we make.
    duration = /^-?\d+(\.\d+)?$/.test(dur) ? Number(dur) : 0;
  }
  return { name, duration, description: params.get('desc') };
}

function parseHeader(value: string): Metric[] {
  return split(value).map(parseMetric).filter((m): m is Metric => m !== null);
}

/** Each metric as written (between top-level commas), for boundary checks. */
function rawMetrics(value: string): string[] {
  return split(value);
}

function wellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** desc keeps the first 96 UTF-16 units, one fewer rather than half a surrogate pair. */
function first96(s: string): string {
  if (s.length <= 96) return s;
  return /[\uD800-\uDBFF]/.test(s[95]!) ? s.slice(0, 95) : s.slice(0, 96);
}

function setOnRealResponse(value: string): void {
  const res = new ServerResponse(new IncomingMessage(new Socket()));
  res.setHeader('Server-Timing', value);
  res.appendHeader('Server-Timing', value);
  validateHeaderValue('Server-Timing', value);
}

function profileJSON(children: TimingJSON[], durationMs = 10): ProfileJSON {
  return {
    v: 1,
    id: '00000000-0000-4000-8000-000000000000',
    name: 'GET /',
    machine: 'web-1',
    started: '2026-11-29T12:00:00.000Z',
    durationMs,
    droppedSteps: 0,
    warnings: [],
    root: { name: 'GET /', startMs: 0, durationMs, children },
  };
}

const leaf = (name: string, durationMs = 1): TimingJSON => ({ name, startMs: 0, durationMs, children: [] });

describe('exact header', () => {
  test('a known tree: steps, then categories, then total', async () => {
    const c = fakeClock(1000);
    const profile = new Profile('GET /users/42', resolveCore(fixed(c) as Record<string, unknown>), { method: 'GET', path: '/users/42' });
    await runInProfile(profile, async () => {
      c.t = 1001.2;
      await step('load user', async () => {
        c.t = 1001.3;
        await timing('sql', 'select * from users where id = ?', async () => {
          c.t = 1004.4;
        });
        c.t = 1004.6;
      });
      try {
        step('render "café" ☕', () => {
          step('header', () => {
            timing('sql', 'select 2', () => {
              c.t = 1005;
            });
          });
          c.t = 1010;
          throw new Error('x');
        });
      } catch {
        // expected
      }
      step('pending', () => {
        timing('redis', 'GET k', () => {
          c.t = 1010.25;
        });
      });
      c.t = 1376.9;
    });
    closeProfile(profile);
    expect(renderServerTiming(profile)).toBe(
      'load_user;dur=3.4;desc="load user", ' +
        'render_caf;dur=5.4;desc="render \\"caf%C3%A9\\" %E2%98%95", ' +
        'pending;dur=0.3, ' +
        'sql;dur=3.5;desc="sql (2 x 3.5ms summed)", ' +
        'redis;dur=0.3;desc="redis (1 x 0.3ms summed)", ' +
        'total;dur=376.9',
    );
  });

  test('B4: "café ☕" exactly', async () => {
    const { profile } = await withProfile('job', () => step('café ☕', () => 0), fixed(fakeClock()));
    const v = renderServerTiming(profile);
    expect(v).toBe('caf;dur=0.0;desc="caf%C3%A9 %E2%98%95", total;dur=0.0');
    expect(decodeURIComponent(parseHeader(v)[0]!.description!)).toBe('café ☕');
    setOnRealResponse(v);
  });

  test('names that are tokens already need no desc; reserved and empty names are renamed', () => {
    const v = renderServerTiming(profileJSON([leaf('db'), leaf('total'), leaf('more'), leaf(''), leaf('---'), leaf('  ')]));
    expect(v).toBe(
      // '' and '  ' both become `step`: one metric, the count in desc.
      'db;dur=1.0, total_;dur=1.0;desc="total", more_;dur=1.0;desc="more", step;dur=1.0;desc="2 x ", ---;dur=1.0, total;dur=10.0',
    );
  });

  test('custom categories: wall time as dur (the union of their intervals), count and summed time in desc, across the whole tree, in first-seen order', () => {
    const t = (category: string, durationMs: number) => ({ category, command: 'x', startMs: 0, durationMs });
    const json = profileJSON([
      { ...leaf('a'), custom: [t('sql', 1), t('http', 0.25)], children: [{ ...leaf('a1'), custom: [t('sql', 2.125)] }] },
      { ...leaf('b'), custom: [t('sql', 3.5), t('redis', 0.05)] },
    ]);
    json.root.custom = [t('cache', 4)];
    expect(renderServerTiming(json)).toBe(
      // The three sql timings all start at 0: 3.5 ms of wall time, 6.6 ms summed.
      'a;dur=1.0, b;dur=1.0, cache;dur=4.0;desc="cache (1 x 4.0ms summed)", sql;dur=3.5;desc="sql (3 x 6.6ms summed)", ' +
        'http;dur=0.3;desc="http (1 x 0.3ms summed)", redis;dur=0.1;desc="redis (1 x 0.1ms summed)", total;dur=10.0',
    );
  });
});

const anyName = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: fc.constantFrom('"', '\\', '%', ',', ';', '=', '\r', '\n', '\0', '\t', ' ', 'é', '☕', '😀', '\ud800', '\udc00', 'a', '%25') }),
);

describe('B2/B3: any names give a valid, ASCII, settable header', () => {
  test('B2 B3 property: printable ASCII, parses into valid metrics, desc round-trips, setHeader never throws', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(anyName, fc.double({ min: 0, max: 1e7, noNaN: true })), { maxLength: 12 }),
        fc.array(fc.tuple(anyName, fc.double({ min: 0, max: 1e5, noNaN: true })), { maxLength: 4 }),
        (steps, customs) => {
          const json = profileJSON(steps.map(([n, d]) => leaf(n, d)));
          json.root.custom = customs.map(([category, durationMs]) => ({ category, command: 'c', startMs: 0, durationMs }));
          const v = renderServerTiming(json, { maxBytes: 1 << 20 });
          expect(v).toMatch(/^[\x20-\x7E]*$/);
          setOnRealResponse(v);

          const metrics = parseHeader(v);
          const cats = [...new Set(customs.map(([c]) => c))];
          // One metric per metric name (issue 59 item 8): steps whose names reduce to one token
          // share it, with their count in desc and their wall time (all start at 0: the longest).
          const byToken = new Map<string, [string, number][]>();
          for (const st of steps) {
            const g = byToken.get(token(st[0]));
            if (g === undefined) byToken.set(token(st[0]), [st]);
            else g.push(st);
          }
          const groups = [...byToken.values()];
          expect(metrics).toHaveLength(groups.length + cats.length + 1);
          for (const m of metrics) {
            expect(m.name).toMatch(TOKEN);
            expect(Number.isFinite(m.duration)).toBe(true);
            expect(m.duration).toBeGreaterThanOrEqual(0);
          }
          for (const raw of rawMetrics(v)) expect(raw).toMatch(/;dur=\d+\.\d(;|$)/);
          groups.forEach((g, i) => {
            const m = metrics[i]!;
            const [name] = g[0]!;
            const said = g.length === 1 ? name : `${g.length} x ${name}`;
            // desc is left out only when the token alone says it all.
            const desc = m.description === undefined ? m.name : decodeURIComponent(m.description);
            if (said.length <= 96) expect(desc).toBe(wellFormed(said));
            else expect(desc).toBe(wellFormed(first96(said)));
            // A group's wall time is a union, in the JSON's microseconds (as a category's below).
            const d = g.length === 1 ? g[0]![1] : Math.round(Math.max(...g.map(([, x]) => x)) * 1000) / 1000;
            expect(Math.abs(m.duration - d)).toBeLessThanOrEqual(0.05 + 1e-9);
          });
          cats.forEach((cat, k) => {
            const m = metrics[groups.length + k]!;
            const mine = customs.filter(([c]) => c === cat);
            // The desc keeps the count (and the summed time); `dur` is the wall time: all of these
            // start at 0, so the longest, clipped to the request (10 ms here). Both are the
            // category summary's, in the JSON's microseconds, then shown to 0.1 ms: 5.5495 is
            // 5.55 in the summary and 5.6 in the header, as for a sealed profile's own JSON.
            const micro = (x: number) => Math.round(x * 1000) / 1000;
            const sum = micro(mine.reduce((acc, [, d]) => acc + d, 0));
            expect(decodeURIComponent(m.description!)).toBe(wellFormed(first96(`${cat} (${mine.length} x ${ms1(sum)}ms summed)`)));
            const longest = micro(Math.min(10, Math.max(...mine.map(([, d]) => d))));
            expect(Math.abs(m.duration - longest)).toBeLessThanOrEqual(0.05 + 1e-9);
          });
          expect(metrics[metrics.length - 1]!.name).toBe('total');
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('a long desc is cut without splitting a surrogate pair', () => {
    const v = renderServerTiming(profileJSON([leaf('a'.repeat(95) + '😀'), leaf('b'.repeat(94) + '😀x')]));
    const [m1, m2] = parseHeader(v);
    expect(decodeURIComponent(m1!.description!)).toBe('a'.repeat(95));
    expect(decodeURIComponent(m2!.description!)).toBe('b'.repeat(94) + '😀');
  });

  test('B2: a name with CR LF cannot inject a header', async () => {
    const { profile } = await withProfile('job', () => step('a\r\nSet-Cookie: x=1', () => 0), fixed(fakeClock()));
    const v = renderServerTiming(profile);
    expect(v).toBe('a_Set-Cookie_x_1;dur=0.0;desc="a%0D%0ASet-Cookie: x=1", total;dur=0.0');
    setOnRealResponse(v);
  });

  test('B4: a quoted-pair is never used for non-ASCII (\\u would parse as a plain u)', () => {
    const v = renderServerTiming(profileJSON([leaf('ü\u0100\u{1F600}')]));
    expect(v).not.toContain('\\u');
    expect(decodeURIComponent(parseHeader(v)[0]!.description!)).toBe('ü\u0100\u{1F600}');
  });

  test('B3: durations are finite, with one decimal, also for hostile JSON numbers', () => {
    const v = renderServerTiming(profileJSON([leaf('neg', -5), leaf('nan', NaN), leaf('tiny', 1e-9), leaf('big', 123456789.06)], 0.04));
    expect(v).toBe('neg;dur=0.0, nan;dur=0.0, tiny;dur=0.0, big;dur=123456789.1, total;dur=0.0');
  });
});

describe('B5: maxBytes', () => {
  test('10,000 top-level steps stay within 2048 bytes by default, cut at metric boundaries, total last', async () => {
    const { profile } = await withProfile(
      'job',
      () => {
        for (let i = 0; i < 10_000; i++) step(`step ${i}`, () => 0);
      },
      fixed(fakeClock(), { maxSteps: 10_000 }),
    );
    const v = renderServerTiming(profile);
    expect(Buffer.byteLength(v)).toBeLessThanOrEqual(2048);
    const full = rawMetrics(renderServerTiming(profile, { maxBytes: 1 << 30 }));
    expect(full).toHaveLength(10_001);
    const got = rawMetrics(v);
    const kept = got.slice(0, -2);
    expect(kept).toEqual(full.slice(0, kept.length));
    expect(kept.length).toBeGreaterThan(10);
    expect(got[got.length - 2]).toBe(`more;desc="${10_000 - kept.length} more"`);
    expect(got[got.length - 1]).toBe('total;dur=0.0');
    // Nothing more would have fitted.
    const oneMore = [...kept, full[kept.length], `more;desc="${10_000 - kept.length - 1} more"`, 'total;dur=0.0'].join(', ');
    expect(Buffer.byteLength(oneMore)).toBeGreaterThan(2048);
    setOnRealResponse(v);
  });

  test('B5 property: any maxBytes from the minimum up, any number of metrics', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: MIN_MAX_BYTES, max: 3000 }),
        fc.array(fc.tuple(anyName, fc.double({ min: 0, max: 1e6, noNaN: true })), { maxLength: 80 }),
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        (maxBytes, steps, total) => {
          const json = profileJSON(steps.map(([n, d]) => leaf(n, d)), total);
          const v = renderServerTiming(json, { maxBytes });
          expect(Buffer.byteLength(v)).toBeLessThanOrEqual(maxBytes);
          expect(v).toMatch(/^[\x20-\x7E]*$/);
          const full = rawMetrics(renderServerTiming(json, { maxBytes: 1 << 30 }));
          const got = rawMetrics(v);
          expect(got[got.length - 1]).toBe(full[full.length - 1]);
          expect(got[got.length - 1]).toMatch(/^total;dur=\d+\.\d$/);
          const hasMore = got.length >= 2 && got[got.length - 2]!.startsWith('more;');
          const kept = got.slice(0, hasMore ? -2 : -1);
          expect(kept).toEqual(full.slice(0, kept.length));
          if (hasMore) expect(got[got.length - 2]).toBe(`more;desc="${full.length - 1 - kept.length} more"`);
          else expect(kept.length).toBe(full.length - 1);
          for (const m of parseHeader(v)) expect(m.name).toMatch(TOKEN);
        },
      ),
      { numRuns: 1000 },
    );
  });

  test('B5 property: a value that fits maxBytes whole is never cut, however short its last metrics', () => {
    // Before, a `more` was reserved at every metric, so with maxBytes exactly the whole value's
    // length a last metric shorter than `more;desc="1 more"` (as `a;dur=0.0` is) was dropped.
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.oneof(anyName, fc.constantFrom('a', 'b', 'x y')), fc.double({ min: 0, max: 1e6, noNaN: true })), { maxLength: 40 }),
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        (steps, total) => {
          const json = profileJSON(steps.map(([n, d]) => leaf(n, d)), total);
          const full = renderServerTiming(json, { maxBytes: 1 << 30 });
          fc.pre(full.length >= MIN_MAX_BYTES);
          expect(renderServerTiming(json, { maxBytes: full.length })).toBe(full);
        },
      ),
      { numRuns: 1000 },
    );
    const short = profileJSON([leaf('load user', 3.4), leaf('permissions', 0.1), leaf('a', 0)], 4);
    const whole = renderServerTiming(short, { maxBytes: 1 << 30 });
    expect(whole).toBe('load_user;dur=3.4;desc="load user", permissions;dur=0.1, a;dur=0.0, total;dur=4.0');
    expect(renderServerTiming(short, { maxBytes: whole.length })).toBe(whole);
  });

  test('a step name kept between renders gives the metric it gave the first time, blocking or not', () => {
    const a = profileJSON([leaf('load user', 3.4), leaf('sort', 0.05)]);
    const blocking: TimingJSON = { ...leaf('load user', 30), syncMs: 25, blocking: true };
    const b = profileJSON([blocking, leaf('sort', 2)]);
    for (let i = 0; i < 3; i++) {
      expect(renderServerTiming(a)).toBe('load_user;dur=3.4;desc="load user", sort;dur=0.1, total;dur=10.0');
      expect(renderServerTiming(b)).toBe('load_user;dur=30.0;desc="load user (blocking: 25.0ms sync)", sort;dur=2.0, total;dur=10.0');
    }
    // Past the 512 names kept, and past the 96 characters kept.
    for (let i = 0; i < 1300; i++) expect(renderServerTiming(profileJSON([leaf(`step ${i}`, i)]))).toBe(`step_${i};dur=${i}.0;desc="step ${i}", total;dur=10.0`);
    const long = 'x y '.repeat(30);
    expect(renderServerTiming(profileJSON([leaf(long, 1)]))).toBe(`x_y_x_y_x_y_x_y_x_y_x_y_x_y_x_y;dur=1.0;desc="${long.slice(0, 96)}", total;dur=10.0`);
  });

  test('B5: a maxBytes that is not a number is a coded error, never a silently uncapped header', () => {
    const json = profileJSON(Array.from({ length: 500 }, (_, i) => leaf(`s${i}`)));
    for (const [bad, says] of [
      [NaN, 'got NaN (number)'],
      ['2048', 'got "2048" (string)'],
      [{}, 'got an object'],
    ] as const) {
      expect(() => renderServerTiming(json, { maxBytes: bad as unknown as number })).toThrow(
        expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: expect.stringContaining(says) }),
      );
    }
    expect(() => renderServerTiming({} as ProfileJSON)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' }));
  });

  test('maxBytes below the minimum is raised to it', () => {
    const json = profileJSON(Array.from({ length: 50 }, (_, i) => leaf(`s${i}`)));
    const v = renderServerTiming(json, { maxBytes: 1 });
    expect(Buffer.byteLength(v)).toBeLessThanOrEqual(MIN_MAX_BYTES);
    // Room for the id (the badge's) too: 128 bytes since it came.
    expect(MIN_MAX_BYTES).toBe(128);
    const withId = renderServerTiming(json, { maxBytes: 1, id: true });
    expect(Buffer.byteLength(withId)).toBeLessThanOrEqual(MIN_MAX_BYTES);
    expect(withId).toMatch(/^s0;dur=1\.0, s1;dur=1\.0, s2;dur=1\.0, more;desc="47 more", miniprof;desc="00000000-0000-4000-8000-000000000000", total;dur=10\.0$/);
    expect(v.endsWith('total;dur=10.0')).toBe(true);
  });
});
