/**
 * Bad input, fuzzed (fast-check) over the public API and the options: any value as a name, a
 * category, a command or an option gives either a coded setup error (options) or a recorded,
 * cut string (names); never an exception at request time, never invalid output. Every output is
 * checked the way its consumer would: the HTML comment with an HTML parser (parse5), the
 * Server-Timing value with Node's own `http.validateHeaderValue`, the JSON by a round trip.
 */
import http from 'node:http';
import express from 'express';
import fc from 'fast-check';
import Fastify from 'fastify';
import { parse } from 'parse5';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { openProfiles } from '../src/core/context.js';
import { HTTP_KEYS } from '../src/http/config.js';
import { CORE_KEYS } from '../src/core/options.js';
import {
  currentProfile,
  renderHtmlComment,
  renderServerTiming,
  renderText,
  step,
  timing,
  withProfile,
  type Profile,
  type ProfileJSON,
  type TimingJSON,
} from '../src/index.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';
import { catchEscapes } from './helpers/escapes.js';

const CODES = ['MINIPROF_ERR_INVALID_OPTION', 'MINIPROF_ERR_UNKNOWN_OPTION'];

/** Anything an app could pass where a string or an option is expected. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.integer(),
  fc.double(),
  fc.bigInt(),
  fc.boolean(),
  fc.constant(undefined),
  fc.constant(null),
  fc.string().map((s) => Symbol(s)),
  fc.object(),
  fc.array(fc.anything(), { maxLength: 3 }),
  fc.func(fc.anything()),
  fc.anything(),
  fc.constant({
    toString() {
      throw new Error('toString fault');
    },
  }),
  fc.constant(Object.create(null) as unknown),
  fc.constant({ [Symbol.toPrimitive]: () => ({}) }),
);

const MAX_NAME = 200;

function isCodedSetupError(err: unknown): boolean {
  return (
    err instanceof TypeError &&
    CODES.includes((err as { code?: string }).code ?? '') &&
    err.message.startsWith('miniprof: ')
  );
}

/** What `String(value)` gives, or null when it throws. */
function stringOf(v: unknown): string | null {
  try {
    return String(v);
  } catch {
    return null;
  }
}

function names(t: TimingJSON, out: string[] = []): string[] {
  out.push(t.name);
  for (const c of t.custom ?? []) out.push(c.category, c.command);
  for (const c of t.children) names(c, out);
  return out;
}

/** The outputs a consumer reads, each checked with that consumer's rules. */
function checkOutputs(p: Profile | ProfileJSON): void {
  const json = JSON.parse(JSON.stringify(p)) as ProfileJSON;
  expect(json.v).toBe(1);
  for (const n of names(json.root)) expect(typeof n).toBe('string');
  const text = renderText(p);
  expect(typeof text).toBe('string');
  // The comment is exactly one comment node to an HTML parser, whatever the names.
  const doc = parse(`<!doctype html><html><head></head><body><p>x</p>${renderHtmlComment(p)}</body></html>`);
  const body = (doc.childNodes[1] as unknown as { childNodes: Array<{ nodeName: string; childNodes?: unknown[] }> }).childNodes[1]!;
  expect(body.childNodes!.map((n) => (n as { nodeName: string }).nodeName)).toEqual(['p', '#comment']);
  const st = renderServerTiming(p);
  expect(st).toMatch(/^[\x20-\x7e]*$/);
  expect(() => http.validateHeaderValue('Server-Timing', st)).not.toThrow();
  expect(st.length).toBeLessThanOrEqual(2048);
}

describe('names, categories and commands', () => {
  test('B1, B2, E1: any value as a step name, a category or a command is recorded as a cut string; fn runs once; outputs stay valid', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(anyValue, anyValue, anyValue), { minLength: 1, maxLength: 6 }), async (inputs) => {
        let t = 0;
        let calls = 0;
        const { result, profile } = await withProfile(
          'fuzz',
          async () => {
            const got: unknown[] = [];
            for (const [name, category, command] of inputs) {
              got.push(step(name as string, () => ++calls));
              got.push(await step(name as string, async () => timing(category as string, command as string, () => ++calls)));
              const s = step(name as string);
              t += 1;
              s.stop();
            }
            return got;
          },
          { clock: () => t, now: () => 0, machine: 'fuzz' },
        );
        expect(result).toEqual(Array.from({ length: inputs.length * 2 }, (_, i) => i + 1));
        expect(calls).toBe(inputs.length * 2);
        const json = profile.toJSON();
        const recorded = json.root.children;
        expect(recorded.length).toBe(inputs.length * 3);
        inputs.forEach(([name, category, command], i) => {
          const want = stringOf(name);
          for (const r of recorded.slice(i * 3, i * 3 + 3)) {
            expect(r.name.length).toBeLessThanOrEqual(MAX_NAME);
            if (want === null) expect(r.name).toBe('[unprintable]');
            else if (want.length <= MAX_NAME) expect(r.name).toBe(want);
            else expect(want.startsWith(r.name.slice(0, -3)) && r.name.endsWith('...')).toBe(true);
          }
          const c = recorded[i * 3 + 1]!.custom![0]!;
          expect(c.category.length).toBeLessThanOrEqual(MAX_NAME);
          expect(c.command.length).toBeLessThanOrEqual(2000);
          if (stringOf(category) !== null && stringOf(category)!.length <= MAX_NAME) expect(c.category).toBe(stringOf(category));
          // Commands go through `redact` (literals become `?`), so only their bound is exact.
          expect(typeof c.command).toBe('string');
        });
        checkOutputs(profile);
        checkOutputs(profile.toJSON());
      }),
      { numRuns: 300 },
    );
  });

  test('B3: a step named like one of miniprof\'s own metrics (total, more, event-loop) cannot pass for it', async () => {
    const { profile } = await withProfile(
      'p',
      () => {
        for (const name of ['total', 'more', 'event-loop', ' total ']) step(name, () => null);
      },
      { clock: () => 0, now: () => 0 },
    );
    expect(renderServerTiming(profile)).toBe(
      // `total` and ` total ` are both `total_`: one metric, the count in desc (issue 59 item 8).
      'total_;dur=0.0;desc="2 x total", more_;dur=0.0;desc="more", event-loop_;dur=0.0;desc="event-loop", total;dur=0.0',
    );
  });

  test('any value as the profile name of withProfile is recorded as a cut string', async () => {
    await fc.assert(
      fc.asyncProperty(anyValue, async (name) => {
        const { profile } = await withProfile(name as string, () => step('x', () => 1), { clock: () => 0, now: () => 0 });
        expect(profile.name.length).toBeLessThanOrEqual(MAX_NAME);
        checkOutputs(profile);
      }),
      { numRuns: 200 },
    );
  });

  test('renderers given anything but a profile throw a coded error, never anything else', () => {
    fc.assert(
      fc.property(anyValue, (v) => {
        for (const render of [renderText, renderHtmlComment, renderServerTiming] as Array<(p: unknown) => string>) {
          try {
            render(v);
          } catch (err) {
            expect((err as { code?: string }).code).toBe('MINIPROF_ERR_INVALID_ARGUMENT');
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('options', () => {
  /** Known keys, nested keys, and keys nobody knows. */
  const key = fc.oneof(fc.constantFrom(...HTTP_KEYS), fc.string({ maxLength: 12 }));
  const options = fc.oneof(
    { weight: 5, arbitrary: fc.dictionary(key, anyValue, { maxKeys: 3 }) },
    { weight: 1, arbitrary: anyValue },
    {
      weight: 2,
      arbitrary: fc.record({
        serverTiming: fc.oneof(anyValue, fc.dictionary(fc.constantFrom('maxBytes', 'crossOrigin', 'x'), anyValue)),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ results: fc.oneof(anyValue, fc.dictionary(fc.constantFrom('basePath', 'store', 'listLimit', 'x'), anyValue)) }),
    },
  );

  test('any options to the Express middleware: it is made, or a coded TypeError naming the option is thrown', () => {
    fc.assert(
      fc.property(options, (o) => {
        try {
          expect(typeof expressMiniprof(o as never)).toBe('function');
        } catch (err) {
          if (!isCodedSetupError(err)) throw err;
        }
      }),
      { numRuns: 1000 },
    );
  });

  test('any options to the Fastify plugin: it registers, or registration fails with a coded TypeError', async () => {
    await fc.assert(
      fc.asyncProperty(options, async (o) => {
        const app = Fastify();
        try {
          await app.register(fastifyMiniprof, o as never);
          await app.ready();
        } catch (err) {
          if (!isCodedSetupError(err)) throw err;
        } finally {
          await app.close();
        }
      }),
      { numRuns: 300 },
    );
  });

  test('any options to withProfile: it runs, or rejects with a coded TypeError before running fn', async () => {
    const coreKey = fc.oneof(fc.constantFrom(...CORE_KEYS), fc.string({ maxLength: 12 }));
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.dictionary(coreKey, anyValue, { maxKeys: 3 }), anyValue), async (o) => {
        let ran = false;
        try {
          const { profile } = await withProfile('p', () => step('s', () => (ran = true)), o as never);
          expect(ran).toBe(true);
          expect(profile.sealed).toBe(true);
        } catch (err) {
          if (!isCodedSetupError(err)) throw err;
          expect(ran).toBe(false);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('request time', () => {
  const escaped = catchEscapes();
  afterEach(async () => {
    await closeServers();
  });

  const PAGE = '<!doctype html><html><head></head><body><p>page</p></body></html>';

  /**
   * The response is the page, or the page with exactly one comment before </body>, and after it
   * the badge's one external script (on by default).
   */
  function checkPage(status: number, body: string, serverTiming: string | undefined): void {
    expect(status).toBe(200);
    if (body !== PAGE) {
      const doc = parse(body);
      const el = (doc.childNodes[1] as unknown as { childNodes: Array<{ childNodes: Array<{ nodeName: string }> }> }).childNodes[1]!;
      expect(['p #comment', 'p #comment script']).toContain(el.childNodes.map((n) => n.nodeName).join(' '));
      expect(body.replace(/<!--[\s\S]*?-->/, '').replace(/<script src="\/_miniprof\/badge\.js\?v=[\w-]+" data-position="bottom-right" defer data-id="[\da-f-]{36}"><\/script>/, '')).toBe(PAGE);
    }
    if (serverTiming !== undefined) {
      expect(serverTiming).toMatch(/^[\x20-\x7e]*$/);
      expect(() => http.validateHeaderValue('Server-Timing', serverTiming)).not.toThrow();
    }
  }

  const stepNames = fc.array(fc.tuple(anyValue, anyValue, anyValue), { minLength: 1, maxLength: 5 });

  test('B1, B2: Express on a real socket: any step names, categories and commands give a valid page and header', async () => {
    let current: unknown[][] = [];
    const reports: unknown[] = [];
    const app = express();
    app.use(expressMiniprof({ isDeveloper: () => true, onInternalError: (e) => reports.push(e) }));
    app.get('/', async (_req, res) => {
      for (const [name, category, command] of current) {
        await step(name as string, async () => timing(category as string, command as string, () => null));
      }
      res.type('html').send(PAGE);
    });
    const port = await serve(app);
    await fc.assert(
      fc.asyncProperty(stepNames, async (inputs) => {
        current = inputs;
        const r = await raw(port, { path: '/' });
        checkPage(r.status, r.payload.toString('utf8'), r.headers['server-timing']?.join(', '));
        expect(Number(r.headers['content-length']![0])).toBe(r.payload.byteLength);
      }),
      { numRuns: 100 },
    );
    await waitFor(() => openProfiles() === 0, 3000, 'every profile sealed');
    expect(reports).toEqual([]);
    expect(escaped).toEqual([]);
  });

  test('B1, B2: Fastify: any step names, categories and commands give a valid page and header', async () => {
    let current: unknown[][] = [];
    const reports: unknown[] = [];
    const app = Fastify();
    await app.register(fastifyMiniprof, { isDeveloper: () => true, onInternalError: (e) => reports.push(e) });
    app.get('/', async (_req, reply) => {
      for (const [name, category, command] of current) {
        await step(name as string, async () => timing(category as string, command as string, () => null));
      }
      return reply.type('text/html; charset=utf-8').send(PAGE);
    });
    await fc.assert(
      fc.asyncProperty(stepNames, async (inputs) => {
        current = inputs;
        const r = await app.inject({ url: '/' });
        checkPage(r.statusCode, r.body, r.headers['server-timing'] as string | undefined);
      }),
      { numRuns: 200 },
    );
    await app.close();
    await waitFor(() => openProfiles() === 0, 3000, 'every profile sealed');
    expect(reports).toEqual([]);
    expect(escaped).toEqual([]);
  });

  test('A5: secrets in cookies, Authorization, other headers and the query string appear in no output (comment, header, JSON)', async () => {
    let last: ProfileJSON | undefined;
    const app = Fastify();
    await app.register(fastifyMiniprof, { isDeveloper: () => true, results: false });
    app.get('/account', async (_req, reply) => {
      await step('load', async () => null);
      const p = currentProfile()!;
      reply.raw.once('close', () => (last = p.toJSON()));
      return reply.type('text/html').send(PAGE);
    });
    const secret = fc.stringMatching(/^[A-Za-z0-9]{12,24}$/);
    await fc.assert(
      fc.asyncProperty(secret, secret, secret, secret, async (cookie, auth, header, query) => {
        last = undefined;
        const r = await app.inject({
          url: `/account?token=${query}`,
          headers: { cookie: `session=${cookie}`, authorization: `Bearer ${auth}`, 'x-api-key': header },
        });
        await waitFor(() => last !== undefined, 3000, 'profile sealed');
        const outputs = [r.body, String(r.headers['server-timing']), JSON.stringify(last)];
        for (const s of [cookie, auth, header, query]) {
          for (const out of outputs) expect(out.includes(s)).toBe(false);
        }
        expect(last!.request).toEqual({ method: 'GET', path: '/account', status: 200 });
      }),
      { numRuns: 50 },
    );
    await app.close();
  });

  test('C11: function options that return anything (isDeveloper, clock, now, onInternalError) never fail a request (both adapters)', async () => {
    // Not fc.func: it hashes its arguments, and stringifying a whole request takes a second.
    const fn = fc.oneof(
      fc.oneof(anyValue, fc.constant(true)).map((v) => () => v),
      fc.constant(() => {
        throw new Error('option fault');
      }),
    );
    // The two callbacks that may be async may also reject (a clock that returns a rejected
    // promise is the app's own unhandled rejection, not something miniprof could own).
    const asyncFn = fc.oneof(fn, fc.constant(() => Promise.reject(new Error('option fault'))));
    const fnOptions = fc.record(
      { isDeveloper: asyncFn, clock: fn, now: fn, onInternalError: asyncFn },
      { requiredKeys: ['isDeveloper'] },
    );
    // Express over a real socket: one server, the middleware under test swapped in per run.
    let middleware: express.RequestHandler = (_req, _res, next) => next();
    const server = express();
    server.use((req, res, next) => middleware(req, res, next));
    server.get('/', async (_req, res) => {
      await step('a', async () => step('b', () => null));
      res.type('html').send(PAGE);
    });
    const port = await serve(server);
    await fc.assert(
      fc.asyncProperty(fnOptions, async (o) => {
        const app = Fastify();
        await app.register(fastifyMiniprof, o as never);
        app.get('/', async (_req, reply) => {
          await step('a', async () => step('b', () => null));
          return reply.type('text/html').send(PAGE);
        });
        const r = await app.inject({ url: '/' });
        checkPage(r.statusCode, r.body, r.headers['server-timing'] as string | undefined);
        await app.close();
        middleware = expressMiniprof(o as never) as unknown as express.RequestHandler;
        const e = await raw(port, { path: '/' });
        checkPage(e.status, e.payload.toString('utf8'), e.headers['server-timing']?.join(', '));
      }),
      { numRuns: 200, timeout: 5000 },
    );
    await waitFor(() => openProfiles() === 0, 3000, 'every profile sealed');
    await new Promise((r) => setTimeout(r, 20));
    expect(escaped).toEqual([]);
  });
});
