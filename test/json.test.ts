import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { jsonBytes, jsonCopy, profileBytes } from '../src/core/json.js';
import { step, timing, withProfile } from '../src/index.js';
import { closeProfile, runInProfile } from '../src/core/context.js';
import { resolveCore } from '../src/core/options.js';
import { Profile } from '../src/core/profile.js';
import type { ProfileJSON } from '../src/core/types.js';

/** Strings that exercise every escaping and UTF-8 width: quotes, controls, DEL, 2-, 3- and 4-byte characters, lone surrogates. */
const text = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: fc.constantFrom('"', '\\', '\b', '\t', '\n', '\f', '\r', '\0', '\x1f', '\x7f', 'é', '\u2028', '☕', '😀', '\ud800', '\udfff', 'a') }),
);

/** Numbers as profiles hold them (microsecond-rounded ms) and every other double. */
const number = fc.oneof(
  fc.integer({ min: -3e9, max: 3e9 }).map((k) => k / 1000),
  fc.integer({ min: 0, max: 2 ** 31 + 10 }).map((k) => k / 1000),
  fc.double(),
  fc.constantFrom(0, -0, 0.1, 1e21, 1e-7, 2147483.647, 2147483.648, -2147483.648, 999999999.999, Number.MAX_VALUE, Number.MIN_VALUE, NaN, Infinity, -Infinity),
);

/** JSON data plus what JSON.stringify drops or rewrites: undefined, functions, symbols, toJSON. */
const value = fc.letrec((tie) => ({
  leaf: fc.oneof(text, number, fc.boolean(), fc.constant(null), fc.constant(undefined), fc.constant(() => 1), fc.constant(Symbol('s'))),
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('array'), tie('object'), tie('withToJSON')),
  array: fc.array(tie('node'), { maxLength: 6 }),
  object: fc.dictionary(fc.oneof(text, fc.constantFrom('__proto__', 'toString', 'hasOwnProperty', '0', '1')), tie('node'), { maxKeys: 6 }),
  withToJSON: tie('node').map((inner) => ({ toJSON: (key: string) => ({ key, inner }) })),
})).node;

describe('jsonBytes', () => {
  test('equals the UTF-8 length of JSON.stringify for any JSON-like value', () => {
    fc.assert(
      fc.property(value, (v) => {
        const s = JSON.stringify(v);
        // A top-level undefined, function or symbol has no JSON at all.
        if (s === undefined) return;
        expect(jsonBytes(v)).toBe(Buffer.byteLength(s));
      }),
      { numRuns: 3000 },
    );
  });

  test('every number, and every string, exactly', () => {
    fc.assert(
      fc.property(number, (x) => {
        expect(jsonBytes(x)).toBe(JSON.stringify(x).length);
      }),
      { numRuns: 20000 },
    );
    fc.assert(
      fc.property(text, (s) => {
        expect(jsonBytes(s)).toBe(Buffer.byteLength(JSON.stringify(s)));
      }),
      { numRuns: 5000 },
    );
  });

  test('a real profile, and data with its own hasOwnProperty or a null prototype', async () => {
    const { profile } = await withProfile('GET /orders "x"', async () => {
      step('load ☕', () => 1);
      await step('query', async () => null);
    });
    const json = profile.toJSON();
    expect(jsonBytes(json)).toBe(Buffer.byteLength(JSON.stringify(json)));
    const odd = { hasOwnProperty: 1, a: [1, { b: 'é' }] };
    expect(jsonBytes(odd)).toBe(Buffer.byteLength(JSON.stringify(odd)));
    const bare = Object.assign(Object.create(null) as object, { a: 1, b: [true] });
    expect(jsonBytes(bare)).toBe(Buffer.byteLength(JSON.stringify(bare)));
    // Inherited enumerable keys are not JSON's.
    const child = Object.assign(Object.create({ inherited: 1 }) as object, { own: 2 });
    expect(jsonBytes(child)).toBe(Buffer.byteLength(JSON.stringify(child)));
  });

  test('a BigInt throws the TypeError JSON.stringify throws; a cycle throws too (RangeError)', () => {
    expect(() => JSON.stringify({ a: 1n })).toThrow(TypeError);
    expect(() => jsonBytes({ a: 1n })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => jsonBytes(cyclic)).toThrow(RangeError);
  });
});

describe('jsonCopy', () => {
  test('gives what JSON.parse(JSON.stringify(v)) gives, keys in the same order', () => {
    fc.assert(
      fc.property(value, (v) => {
        const s = JSON.stringify(v);
        if (s === undefined) return;
        const copied = jsonCopy(v);
        // Serializing both compares key order, -0 against 0 and own "__proto__" keys exactly.
        expect(JSON.stringify(copied)).toBe(JSON.stringify(JSON.parse(s)));
        expect(copied).toStrictEqual(JSON.parse(s));
      }),
      { numRuns: 3000 },
    );
  });

  test('a "__proto__" key stays an own key and never sets the prototype', () => {
    const v = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    const c = jsonCopy(v);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.keys(c)).toEqual(['__proto__', 'a']);
    expect((c as { polluted?: boolean }).polluted).toBeUndefined();
  });

  test('the copy shares nothing with the original', () => {
    const v = { a: [{ b: 1 }], c: { d: 'x' } };
    const c = jsonCopy(v);
    c.a[0]!.b = 2;
    c.c.d = 'y';
    expect(v).toEqual({ a: [{ b: 1 }], c: { d: 'x' } });
  });
});

/** A tree of work to run through the real API: each node a step (sync or async, maybe failing), a timing, or an open `using` step. */
type Plan = { kind: 'sync' | 'async' | 'fail' | 'timing' | 'open'; name: string; children: Plan[] };
const planAt = (depth: number): fc.Arbitrary<Plan[]> =>
  fc.array(
    fc.record({ kind: fc.constantFrom('sync', 'async', 'fail', 'timing', 'open'), name: text, children: depth === 0 ? fc.constant([]) : planAt(depth - 1) }) as fc.Arbitrary<Plan>,
    { maxLength: 3 },
  );
const plan = planAt(4);

async function run(nodes: Plan[], parallel: boolean): Promise<void> {
  const one = async (p: Plan): Promise<void> => {
    if (p.kind === 'timing') return void timing(p.name.slice(0, 8), `select ${p.name}`, () => 1);
    // Left open: measured up to the seal and marked unfinished.
    if (p.kind === 'open') return void step(p.name);
    if (p.kind === 'sync') return void step(p.name, () => void run(p.children, false));
    try {
      await step(p.name, async () => {
        await run(p.children, !parallel);
        if (p.kind === 'fail') throw new Error('x');
      });
    } catch {
      // the error is the step's, recorded in the profile
    }
  };
  if (parallel) await Promise.all(nodes.map(one));
  else for (const p of nodes) await one(p);
}

describe('profileBytes', () => {
  test('equals the UTF-8 length of JSON.stringify for any profile miniprof seals, as an adapter makes it', async () => {
    const outcome = fc.record({ status: fc.option(fc.integer({ min: 100, max: 599 })), aborted: fc.boolean(), freeze: fc.boolean(), loopMs: fc.option(fc.integer({ min: 0, max: 90_000 })) });
    await fc.assert(
      fc.asyncProperty(plan, fc.array(fc.integer({ min: 0, max: 40_000 }), { minLength: 1, maxLength: 16 }), fc.integer({ min: 1, max: 30 }), text, outcome, async (nodes, steps, maxSteps, path, end) => {
        // An injected clock (ms) moving by the given microsecond steps: blocking, parallelism and
        // every number length occur.
        let t = 0;
        let i = 0;
        const clock = () => (t += steps[i++ % steps.length]! / 1000);
        const cfg = resolveCore({ clock, now: () => 1.7e12, blockingMs: 5, maxSteps, machine: `m ${path}`.slice(0, 200) });
        // What ProfiledResponse does: a request, maybe a freeze at the body, the outcome, the seal.
        const profile = new Profile(`GET ${path}`, cfg, { method: 'GET', path });
        await runInProfile(profile, () => run(nodes, true));
        if (end.freeze) profile.freeze();
        if (end.status !== null) profile.request!.status = end.status;
        if (end.aborted) profile.request!.aborted = true;
        if (end.loopMs !== null) profile.loopDelayMs = end.loopMs / 10;
        closeProfile(profile);
        const json = profile.data();
        const size = Buffer.byteLength(JSON.stringify(json));
        expect(profileBytes(json)).toBe(size);
        // The bound the memory store takes instead of sizing every save: known, and never below
        // the size, custom timings and their summaries included.
        expect(profile.jsonBound()).toBeGreaterThanOrEqual(size);
      }),
      { numRuns: 400 },
    );
  });

  test('a withProfile profile with custom timings, similar groups, dropped steps and odd names', async () => {
    const { profile } = await withProfile('nightly "job"', async () => {
      for (let n = 0; n < 3; n++) await timing('sql', `select * from t where id = ${n}`, async () => n);
      timing('sql', 'select 1', () => 1);
      timing('sql', 'select 1', () => 1);
      step('☕ \u2028 </script>', () => 1);
    }, { maxSteps: 4 });
    const json = (profile as unknown as { data(): ProfileJSON }).data();
    expect(json.similar).toBeDefined();
    expect(json.droppedSteps).toBeGreaterThan(0);
    expect(profileBytes(json)).toBe(Buffer.byteLength(JSON.stringify(json)));
    expect(profile.jsonBound()).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(json)));
  });

  test('jsonBound covers custom timings, their summaries and similar groups, redacted or not', async () => {
    // Few categories and shapes, so that duplicates, similar groups and shared summaries occur.
    // Short strings too: the bound's fixed part per item is then most of it, and must hold alone.
    const category = fc.constantFrom('s', 'http', 'ré\u0001"dis', '\ud83d\ude00');
    const command = fc.tuple(fc.constantFrom('', 'select * from t where id = ', 'GET /users/', 'k\u2028"', '\udc00'), fc.constantFrom('', '1', '22'), fc.oneof(fc.constant(''), text));
    const call = fc.record({ category, command, fail: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(call, { maxLength: 80 }), fc.boolean(), async (calls, redact) => {
        const { profile } = await withProfile('job', async () => {
          for (const c of calls) {
            const cmd = `${c.command[0]}${c.command[1]}${c.command[2]}`;
            try {
              await timing(c.category, cmd, async () => {
                if (c.fail) throw new Error('x');
              });
            } catch {
              // recorded as an error
            }
          }
        }, { redact });
        const json = profile.data();
        expect(profile.jsonBound()).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(json)));
      }),
      { numRuns: 300 },
    );
  });

  test('the analysis fields (concurrency, serialized, fanOut, heldMs, blockingAmbiguous): exact size, and within the bound', async () => {
    const seen = { concurrency: 0, serialized: 0, heldMs: 0, blockingAmbiguous: 0 };
    await fc.assert(
      fc.asyncProperty(
        text,
        fc.array(fc.integer({ min: 1, max: 60_000 }), { minLength: 3, maxLength: 8 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 200_000 }), fc.integer({ min: 0, max: 200_000 }), fc.boolean(), fc.integer({ min: 0, max: 100 })), { maxLength: 6 }),
        async (name, ends, stalls) => {
          let now = 0;
          const cfg = resolveCore({ clock: () => now, now: () => 1.7e12, blockingMs: 5 });
          const profile = new Profile('job', cfg);
          await runInProfile(profile, async () => {
            const gates = ends.map(() => {
              let open!: () => void;
              return { promise: new Promise<void>((r) => (open = r)), open: () => open() };
            });
            // Same-named steps and similar custom timings, all started together, ending in turn.
            const all = Promise.all([
              ...gates.map((g) => step(name, () => g.promise)),
              ...gates.map((g, i) => timing(name.slice(0, 8), `select ${name} where id = ${i}`, () => g.promise)),
            ]);
            for (const [i, e] of ends.map((e, i) => [i, e] as const).sort((x, y) => x[1] - y[1])) {
              now = Math.max(now, e / 1000);
              gates[i]!.open();
              await new Promise((r) => setImmediate(r));
            }
            await all;
          });
          // The process ran `pct` % of each stall (the rest: a busy machine, `notRunMs`).
          for (const [a, d, shared, pct] of stalls) profile.addStall(a, a + d, shared, Math.round((d * pct) / 100));
          closeProfile(profile);
          const json = profile.data();
          const size = Buffer.byteLength(JSON.stringify(json));
          expect(profileBytes(json)).toBe(size);
          expect(profile.jsonBound()).toBeGreaterThanOrEqual(size);
          for (const t of [json.root, ...json.root.children]) for (const k of Object.keys(seen) as (keyof typeof seen)[]) if (t[k] !== undefined) seen[k]++;
        },
      ),
      { numRuns: 200 },
    );
    // The fields did occur.
    for (const n of Object.values(seen)) expect(n).toBeGreaterThan(0);
  });

  test('jsonBound: -1 until sealed, and for a request member the adapters would not write', async () => {
    const cfg = resolveCore({});
    const open = new Profile('GET /', cfg, { method: 'GET', path: '/' });
    expect(open.jsonBound()).toBe(-1);
    closeProfile(open);
    expect(open.jsonBound()).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(open.data())));
    const odd = new Profile('GET /', cfg, { method: 'GET', path: '/' });
    (odd.request as { status: unknown }).status = 'x'.repeat(10_000);
    closeProfile(odd);
    expect(odd.jsonBound()).toBe(-1);
  });
});
