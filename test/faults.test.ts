/**
 * C11 fault injection, every adapter of test/adapters/apps.ts, on real sockets: each of the profiler's seams fails once
 * (the clock, `isDeveloper`, rendering, the header write, the error handler itself) and the app's
 * response must be what the same app sends without miniprof (or that response plus exactly one
 * comment and miniprof's own headers, when the profile could still be rendered). The fault
 * reaches `onInternalError` exactly once; nothing escapes as an uncaught exception or an
 * unhandled rejection, and no request hangs (the raw client gives up after 5 s).
 */
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { openProfiles } from '../src/core/context.js';
import type { MiniprofOptions } from '../src/http/config.js';
import { step } from '../src/index.js';
import type { ProfileStore } from '../src/results/store.js';
import { sleep } from './helpers/clock.js';
import { closeServers, raw, serve, waitFor, withoutDate, type RawResponse } from './helpers/http.js';
import { ADAPTERS, type AdapterUnderTest, type Reply } from './adapters/apps.js';
import { catchEscapes } from './helpers/escapes.js';

const PAGE = '<!doctype html><html><head><title>t</title></head><body><p>café ☕</p></body></html>';

/** Per-request switches a fault can flip from inside the handler. */
interface Ctx {
  t: number;
  explode: boolean;
}

interface Fault {
  title: string;
  /** Options besides `onInternalError`. */
  options: (ctx: Ctx) => MiniprofOptions<never>;
  /** The name of the handler's first step (the app's own value, whatever it is). */
  stepName?: unknown;
  /** A seam earlier in the chain refuses our `Server-Timing` the way Node refuses a bad value. */
  rejectServerTiming?: boolean;
  /** Called by the handler after its first steps, right before it sends. */
  beforeSend?: (ctx: Ctx) => void;
  /** 'identical': not profiled at all; 'profiled': the app's response plus at most one comment. */
  expect: 'identical' | 'profiled';
  reports: 0 | 1;
  check?: (r: RawResponse) => void;
}

const developer = { isDeveloper: () => true };
/** A clock the test controls: it moves one millisecond per read, and throws once told to. */
const steady = (ctx: Ctx) => () => {
  if (ctx.explode) throw new Error('clock fault');
  return (ctx.t += 1);
};

const FAULTS: Fault[] = [
  {
    title: 'C11: the clock goes backwards',
    options: (ctx) => ({ ...developer, clock: () => (ctx.t -= 7) }),
    expect: 'profiled',
    reports: 0,
    check: (r) => {
      // Every span is clamped to zero: a negative duration would be invalid Server-Timing.
      const st = r.headers['server-timing']!.join(', ');
      for (const m of st.matchAll(/dur=([^;,]+)/g)) expect(m[1]).toBe('0.0');
      expect(r.payload.toString()).toContain(' GET /page = 0.0ms\n');
    },
  },
  {
    title: 'C11: the clock throws at render time (a renderer fault), and a step after it still runs',
    options: (ctx) => ({ ...developer, clock: steady(ctx) }),
    beforeSend: (ctx) => {
      ctx.explode = true;
    },
    expect: 'profiled',
    reports: 1,
  },
  {
    title: 'C11: the clock throws as the profile starts',
    options: (ctx) => ({ ...developer, clock: steady({ ...ctx, explode: true }) }),
    expect: 'identical',
    reports: 1,
  },
  {
    title: 'C11: isDeveloper throws',
    options: () => ({
      isDeveloper: () => {
        throw new Error('auth fault');
      },
    }),
    expect: 'identical',
    reports: 1,
  },
  {
    title: 'C11: isDeveloper rejects',
    options: () => ({ isDeveloper: () => Promise.reject(new Error('auth fault')) }),
    expect: 'identical',
    reports: 1,
  },
  {
    title: 'C11: isDeveloper returns a thenable whose then() throws',
    options: () => ({
      isDeveloper: () =>
        ({
          then() {
            throw new Error('thenable fault');
          },
        }) as unknown as Promise<boolean>,
    }),
    expect: 'identical',
    reports: 1,
  },
  {
    title: 'C11: the Server-Timing value is rejected by setHeader',
    options: () => developer,
    rejectServerTiming: true,
    expect: 'profiled',
    reports: 1,
    check: (r) => {
      expect(r.headers['server-timing']).toBeUndefined();
      expect(r.payload.toString()).toContain('<!--');
    },
  },
  {
    title: 'C11: the store throws on save',
    options: () => ({
      ...developer,
      results: {
        store: failingStore(() => {
          throw new Error('store fault');
        }),
      },
    }),
    expect: 'profiled',
    reports: 1,
  },
  {
    title: 'C11: the store rejects on save',
    options: () => ({ ...developer, results: { store: failingStore(() => Promise.reject(new Error('store fault'))) } }),
    expect: 'profiled',
    reports: 1,
  },
  {
    title: 'C11: a step name whose toString throws is recorded as a placeholder, not a fault',
    options: () => developer,
    stepName: {
      toString() {
        throw new Error('name fault');
      },
    },
    expect: 'profiled',
    reports: 0,
    check: (r) => expect(r.payload.toString()).toContain('> [unprintable] = '),
  },
];

/** A results store whose save fails; reading works (and finds nothing). */
function failingStore(save: () => Promise<void>): ProfileStore {
  return { save, get: async () => undefined, list: async () => [] };
}

async function work(ctx: Ctx, fault: Fault): Promise<void> {
  await step((fault.stepName ?? 'load') as string, async () => {
    await step('db', () => sleep(1));
  });
  await Promise.all([step('a', async () => {}), step('b', () => sleep(1))]);
  fault.beforeSend?.(ctx);
  step('after', () => {});
}

function refuseServerTiming(res: ServerResponse): void {
  const setHeader = res.setHeader;
  res.setHeader = function (this: ServerResponse, name: string, value: number | string | readonly string[]) {
    if (name.toLowerCase() === 'server-timing') {
      throw Object.assign(new TypeError('Invalid character in header content ["Server-Timing"]'), { code: 'ERR_INVALID_CHAR' });
    }
    return setHeader.call(this, name, value);
  } as ServerResponse['setHeader'];
}

type Make = (fault: Fault, options: MiniprofOptions<never> | null, ctx: Ctx) => Promise<number>;

/** The same page on every adapter of test/adapters/apps.ts, on the suite's own server. */
function make(adapter: AdapterUnderTest): Make {
  return async (fault, options, ctx) => {
    const routes = {
      '/page': async (): Promise<Reply> => {
        await work(ctx, fault);
        return { headers: { 'x-app': '1', 'content-type': 'text/html; charset=utf-8' }, body: PAGE };
      },
    };
    const listener = await adapter.listener(options as Record<string, unknown> | null, routes);
    if (!fault.rejectServerTiming) return serve(listener);
    // Before any framework sees the response: as if an earlier seam refused the value.
    return serve((req, res) => (refuseServerTiming(res), listener(req, res)));
  };
}

/**
 * Every adapter, every fault; but a refused `setHeader` only where our headers go through Node's
 * `setHeader` (Hono's go onto a `Response`, whose headers Node never sees one by one).
 */
const CASES = ADAPTERS.flatMap((a) => FAULTS.filter((f) => !(f.rejectServerTiming && a.fetchHeaders)).map((f) => [a.name, f.title, make(a), f] as const));

const escaped = catchEscapes();

afterEach(async () => {
  await closeServers();
});

/** Headers miniprof sets or legitimately changes on a developer response. */
const OURS_LIST = new Set(['date', 'etag', 'content-length', 'cache-control', 'server-timing', 'link', 'vary']);
const OURS = { has: (name: string) => OURS_LIST.has(name) || name.startsWith('x-miniprof-') };

function compare(got: RawResponse, base: RawResponse, mode: Fault['expect']): void {
  expect(got.status).toBe(base.status);
  if (mode === 'identical') {
    expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate(base.bytes).toString('latin1'));
    return;
  }
  for (const [name, values] of Object.entries(base.headers)) {
    if (!OURS.has(name)) expect(got.headers[name], name).toEqual(values);
  }
  for (const name of Object.keys(got.headers)) {
    if (!OURS.has(name)) expect(base.headers[name], `added header ${name}`).toBeDefined();
  }
  expect(Number(got.headers['content-length']?.[0])).toBe(got.payload.byteLength);
  const body = got.payload.toString('utf8');
  const comments = body.match(/<!--[\s\S]*?-->/g) ?? [];
  expect(comments.length).toBeLessThanOrEqual(1);
  // The comment, and the badge's tag after it (on by default), are all a developer's page may add.
  expect(body.replace(/<!--[\s\S]*?-->/, '').replace(/<script src="\/_miniprof\/badge\.js\?v=[\w-]+" [^>]*><\/script>/, '')).toBe(base.payload.toString('utf8'));
}

describe.each(CASES)('%s', (_name, _title, make, fault) => {
  describe(fault.title, () => {
    test.each([
      ['onInternalError records it', 'record'],
      ['onInternalError itself throws', 'throw'],
      ['onInternalError is async and rejects', 'reject'],
    ])('%s: the response is the app\'s own, the fault is reported once, nothing escapes', async (_how, how) => {
      const reports: unknown[] = [];
      const ctx: Ctx = { t: 1000, explode: false };
      const options = {
        ...fault.options(ctx),
        onInternalError: (err: unknown) => {
          reports.push(err);
          if (how === 'throw') throw new Error('onInternalError fault');
          if (how === 'reject') return Promise.reject(new Error('onInternalError fault'));
        },
      };
      const basePort = await make(fault, null, { t: 1000, explode: false });
      const port = await make(fault, options, ctx);
      const request = { path: '/page', headers: { Accept: 'text/html', 'If-None-Match': '"x"' } };
      const base = await raw(basePort, request);
      const got = await raw(port, request);
      compare(got, base, fault.expect);
      fault.check?.(got);
      // The profile is sealed on close, however the request went.
      await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
      expect(reports.length, String(reports.map(String))).toBe(fault.reports);
      // An unhandled rejection is only announced after the microtask queue drains.
      await sleep(10);
      expect(escaped).toEqual([]);
    });
  });
});
