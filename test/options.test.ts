import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { step, withProfile, type CoreOptions } from '../src/index.js';
import { CORE_KEYS } from '../src/core/options.js';

interface Coded {
  name: string;
  code: string;
  message: string;
}

/** What withProfile did with `options`: 'ok', or the coded error it rejected with. */
async function outcome(options: unknown): Promise<'ok' | Coded> {
  let ran = false;
  try {
    await withProfile(
      'job',
      () => {
        ran = true;
        step('s', () => 0);
      },
      options as CoreOptions,
    );
    expect(ran).toBe(true);
    return 'ok';
  } catch (err) {
    // Options are checked before anything runs.
    expect(ran).toBe(false);
    expect(err).toBeInstanceOf(TypeError);
    return err as Coded;
  }
}

async function rejects(options: unknown, code: string, ...mentions: string[]): Promise<void> {
  const r = await outcome(options);
  expect(r).not.toBe('ok');
  const err = r as Coded;
  expect(err.code).toBe(code);
  expect(err.message.startsWith('miniprof: ')).toBe(true);
  for (const m of mentions) expect(err.message).toContain(m);
}

const INT_OPTIONS: [string, number, number][] = [
  ['maxSteps', 1, 1_000_000],
  ['maxDepth', 1, 256],
  ['maxNameLength', 8, 10_000],
  ['maxCommandLength', 8, 100_000],
];

describe('withProfile options', () => {
  test('no options, undefined and {} are fine', async () => {
    expect(await outcome(undefined)).toBe('ok');
    expect(await outcome({})).toBe('ok');
    expect(
      await outcome({
        maxSteps: 10,
        maxDepth: 3,
        maxNameLength: 8,
        maxCommandLength: 8,
        machine: 'web-1',
        clock: () => 0,
        now: () => 0,
        onInternalError: () => {},
      }),
    ).toBe('ok');
  });

  test('options that are not an object are refused, naming what was given', async () => {
    await rejects(null, 'MINIPROF_ERR_INVALID_OPTION', 'withProfile options must be an object', 'got null');
    await rejects(42, 'MINIPROF_ERR_INVALID_OPTION', 'got 42 (number)');
    await rejects('fast', 'MINIPROF_ERR_INVALID_OPTION', 'got "fast" (string)');
    await rejects([], 'MINIPROF_ERR_INVALID_OPTION', 'got an array');
    await rejects(() => 0, 'MINIPROF_ERR_INVALID_OPTION', 'got a function');
    await rejects(true, 'MINIPROF_ERR_INVALID_OPTION', 'got true (boolean)');
  });

  test('unknown keys are refused, naming the key and the known ones', async () => {
    await rejects({ maxStep: 10 }, 'MINIPROF_ERR_UNKNOWN_OPTION', '"maxStep"', 'maxSteps');
    await rejects({ maxSteps: 10, htmlComment: true }, 'MINIPROF_ERR_UNKNOWN_OPTION', '"htmlComment"');
    await rejects({ '': 1 }, 'MINIPROF_ERR_UNKNOWN_OPTION', '""');
    await rejects({ __proto__: null, bogus: 1 }, 'MINIPROF_ERR_UNKNOWN_OPTION', '"bogus"');
  });

  for (const [name, min, max] of INT_OPTIONS) {
    test(`${name}: an integer from ${min} to ${max}`, async () => {
      expect(await outcome({ [name]: min })).toBe('ok');
      expect(await outcome({ [name]: max })).toBe('ok');
      const bad: [unknown, string][] = [
        [min - 1, `got ${min - 1} (number)`],
        [max + 1, `got ${max + 1} (number)`],
        [1.5 + min, `got ${1.5 + min} (number)`],
        [NaN, 'got NaN (number)'],
        [Infinity, 'got Infinity (number)'],
        [String(min), `got "${min}" (string)`],
        [BigInt(min), `got ${min} (bigint)`],
        [null, 'got null'],
        [true, 'got true (boolean)'],
        [{}, 'got an object'],
        [[min], 'got an array'],
        [Symbol('n'), 'got Symbol(n) (symbol)'],
      ];
      for (const [value, says] of bad) {
        await rejects({ [name]: value }, 'MINIPROF_ERR_INVALID_OPTION', `option "${name}"`, `from ${min} to ${max}`, says);
      }
    });
  }

  test('machine: a non-empty string of at most 200 characters', async () => {
    expect(await outcome({ machine: 'x' })).toBe('ok');
    expect(await outcome({ machine: 'x'.repeat(200) })).toBe('ok');
    await rejects({ machine: '' }, 'MINIPROF_ERR_INVALID_OPTION', 'option "machine"', 'got "" (string)');
    await rejects({ machine: 'x'.repeat(201) }, 'MINIPROF_ERR_INVALID_OPTION', 'option "machine"', `got "${'x'.repeat(40)}…" (string)`);
    await rejects({ machine: 42 }, 'MINIPROF_ERR_INVALID_OPTION', 'option "machine"', 'got 42 (number)');
    await rejects({ machine: null }, 'MINIPROF_ERR_INVALID_OPTION', 'option "machine"', 'got null');
  });

  for (const name of ['clock', 'now', 'onInternalError']) {
    test(`${name}: a function`, async () => {
      for (const [value, says] of [
        [0, 'got 0 (number)'],
        ['performance.now', 'got "performance.now" (string)'],
        [{}, 'got an object'],
        [null, 'got null'],
      ] as const) {
        await rejects({ [name]: value }, 'MINIPROF_ERR_INVALID_OPTION', `option "${name}"`, 'a function', says);
      }
    });
  }

  test('clocks whose values cannot be converted never fail the request', async () => {
    // fast-check found `now: () => ({ toString: <a Date> })`: Number() of it throws a TypeError.
    // (A clock that throws is a setup fault: the adapters' C11 tests cover it.)
    const unconvertible = { toString: new Date(0) };
    for (const key of ['now', 'clock'] as const) {
      for (const fn of [() => unconvertible, () => Symbol('t'), () => 10n, () => ({ valueOf: () => { throw new Error('no'); } })]) {
        const { profile } = await withProfile('job', () => step('s', () => 0), { [key]: fn } as CoreOptions);
        const json = profile.toJSON();
        expect(json.name).toBe('job');
        expect(json.root.children.map((c) => c.name)).toEqual(['s']);
        expect(Number.isFinite(Date.parse(json.started))).toBe(true);
      }
    }
  });

  test('the errors are TypeErrors with a code, so apps can tell them apart', async () => {
    const r = (await outcome({ maxSteps: 0 })) as Coded;
    expect(r).toBeInstanceOf(TypeError);
    expect(r.name).toBe('TypeError');
    expect(r.code).toBe('MINIPROF_ERR_INVALID_OPTION');
  });
});

/** Any value a config file or a typo could produce, functions included. */
const anyValue = fc.oneof(
  fc.anything({ withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true, withTypedArray: true, withSparseArray: true }),
  fc.integer({ min: -10, max: 2_000_000 }),
  fc.double(),
  fc.func(fc.anything({ withBigInt: true, withDate: true })),
  fc.constantFrom(() => 0, () => Date.now(), () => NaN, () => -1, () => 8.64e15 + 1, () => 'now', () => undefined),
);

describe('property: any value for any option is a coded error or accepted, nothing else', () => {
  for (const key of CORE_KEYS) {
    test(`${key}`, async () => {
      await fc.assert(
        fc.asyncProperty(anyValue, async (value) => {
          const r = await outcome({ [key]: value });
          if (r === 'ok') return;
          expect(r.code).toBe('MINIPROF_ERR_INVALID_OPTION');
          expect(r.message).toContain(`option "${key}"`);
        }),
        { numRuns: 300 },
      );
    });
  }

  test('arbitrary option objects, unknown keys included', async () => {
    const keys = fc.oneof(fc.constantFrom(...CORE_KEYS), fc.string());
    await fc.assert(
      fc.asyncProperty(fc.dictionary(keys, anyValue, { maxKeys: 4 }), async (options) => {
        const r = await outcome(options);
        if (r === 'ok') return;
        expect(['MINIPROF_ERR_INVALID_OPTION', 'MINIPROF_ERR_UNKNOWN_OPTION']).toContain(r.code);
        const unknown = Object.keys(options).filter((k) => !(CORE_KEYS as readonly string[]).includes(k));
        if (unknown.length > 0) expect(r.code).toBe('MINIPROF_ERR_UNKNOWN_OPTION');
      }),
      { numRuns: 500 },
    );
  });
});
