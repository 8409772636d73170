import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { parse, serialize, type DefaultTreeAdapterMap } from 'parse5';
import { renderHtmlComment, renderText, step, timing, withProfile, type ProfileJSON, type TimingJSON } from '../src/index.js';
import { closeProfile, runInProfile } from '../src/core/context.js';
import { resolveCore } from '../src/core/options.js';
import { Profile } from '../src/core/profile.js';
import { escapeText } from '../src/render/escape.js';
import { splice } from '../src/http/inject.js';
import { fakeClock, fixed } from './helpers/clock.js';

type Element = DefaultTreeAdapterMap['element'];
type Comment = DefaultTreeAdapterMap['commentNode'];

/** The inverse of src/render/escape.ts: `\\`, `\n`, `\r`, `\t` and `\u{hex}`. */
function unescapeText(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const next = s[++i];
    if (next === '\\') out += '\\';
    else if (next === 'n') out += '\n';
    else if (next === 'r') out += '\r';
    else if (next === 't') out += '\t';
    else if (next === 'u' && s[i + 1] === '{') {
      const close = s.indexOf('}', i);
      const cp = parseInt(s.slice(i + 2, close), 16);
      // fromCodePoint keeps a lone surrogate as the single unit it was.
      out += String.fromCodePoint(cp);
      i = close;
    } else throw new Error(`bad escape at ${i} in ${JSON.stringify(s)}`);
  }
  return out;
}

describe('exact output', () => {
  async function known(): Promise<Profile> {
    const c = fakeClock(1000);
    const config = resolveCore(fixed(c, { maxSteps: 5 }) as Record<string, unknown>);
    const profile = new Profile('GET /users/42', config, { method: 'GET', path: '/users/42' });
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
            c.t = 1005;
          });
          c.t = 1010;
          throw new Error('x');
        });
      } catch {
        // expected
      }
      void step('pending', () => new Promise(() => {}));
      step('dropped 1', () => 0);
      step('dropped 2', () => 0);
      c.t = 1376.9;
    });
    closeProfile(profile);
    return profile;
  }

  const TEXT = [
    'web-1 at 2026-11-29T12:00:00.000Z',
    'Path: GET /users/42',
    // 1.2ms before the first step; the steps then follow one another to the end.
    ' GET /users/42 = 376.9ms (1.2ms in no step)',
    '> load user = 3.4ms',
    '>> [sql] select * from users where id = ? = 3.1ms',
    '> render "café" ☕ = 5.4ms (error)',
    '>> header = 0.4ms',
    '> pending = 366.9ms (unfinished)',
    '[sql] 1 x 3.1ms summed, 3.1ms wall',
    '! 2 more steps were not recorded (maxSteps or maxDepth)',
    '',
  ].join('\n');

  test('renderText: the whole string', async () => {
    const p = await known();
    expect(renderText(p)).toBe(TEXT);
    // The JSON renders the same as the live profile (e.g. one read back from a store).
    expect(renderText(JSON.parse(JSON.stringify(p)) as ProfileJSON)).toBe(TEXT);
  });

  test('renderHtmlComment: the whole string, and ascii mode', async () => {
    const p = await known();
    expect(renderHtmlComment(p)).toBe(`<!--\n${TEXT}-->`);
    expect(renderHtmlComment(p, { ascii: true })).toBe(
      `<!--\n${TEXT.replace('render "café" ☕', 'render "caf\\u{e9}" \\u{2615}')}-->`,
    );
  });

  test('warnings are printed, escaped, after the tree', async () => {
    const { profile } = await withProfile(
      'job',
      () => {
        const a = step('a-->');
        const b = step('b\n> forged');
        a.stop();
        b.stop();
      },
      fixed(fakeClock()),
    );
    const text = renderText(profile);
    expect(text.split('\n')).toEqual([
      'web-1 at 2026-11-29T12:00:00.000Z',
      ' job = 0.0ms',
      '> a-\\u{2d}> = 0.0ms',
      '> b\\n> forged = 0.0ms',
      '! using timings overlapped: "a-\\u{2d}>" stopped while "b\\n> forged", opened after it, was running; ' +
        'they are shown as siblings. Use step(name, fn) for concurrent code.',
      '',
    ]);
  });

  test('renderers refuse what is not a profile with a coded error', () => {
    for (const bad of [null, undefined, 42, 'x', {}, { v: 2, root: {} }]) {
      expect(() => renderText(bad as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' }));
      expect(() => renderHtmlComment(bad as never)).toThrow(TypeError);
    }
  });
});

describe('escaping', () => {
  const fixedCases: [string, string][] = [
    ['-->', '-\\u{2d}>'],
    ['--!>', '-\\u{2d}!>'],
    ['<!--', '<!-\\u{2d}'],
    ['>', '>'],
    ['<!-', '<!-'],
    ['---', '-\\u{2d}\\u{2d}'],
    ['a\r\nb', 'a\\r\\nb'],
    ['tab\there', 'tab\\there'],
    ['\u2028\u2029', '\\u{2028}\\u{2029}'],
    ['\ud800 \udfff', '\\u{d800} \\u{dfff}'],
    ['\udfff\ud800', '\\u{dfff}\\u{d800}'],
    ['😀', '😀'],
    ['a😀b😀', 'a😀b😀'],
    ['😀\n', '😀\\n'],
    ['\u0000\u001f\u007f\u0085\u009f', '\\u{0}\\u{1f}\\u{7f}\\u{85}\\u{9f}'],
    ['back\\slash \\u{41}', 'back\\\\slash \\\\u{41}'],
    ['plain name, café ☕', 'plain name, café ☕'],
  ];
  for (const [raw, escaped] of fixedCases) {
    test(`B1: ${JSON.stringify(raw)} → ${JSON.stringify(escaped)} and back`, () => {
      expect(escapeText(raw, false)).toBe(escaped);
      expect(unescapeText(escaped)).toBe(raw);
      const ascii = escapeText(raw, true);
      expect(ascii).toMatch(/^[\x20-\x7e]*$/);
      expect(unescapeText(ascii)).toBe(raw);
    });
  }

  test('ordinary names come back as the same string', () => {
    const s = 'load user 42 (cache miss) — ok';
    expect(escapeText(s, false)).toBe(s);
  });

  test('B1 property: escape is reversible and never leaves "--", a control or a line break', () => {
    fc.assert(
      fc.property(anyText, fc.boolean(), (s, ascii) => {
        const e = escapeText(s, ascii);
        expect(unescapeText(e)).toBe(s);
        // No lone surrogate in the output: a page encoder would turn it into U+FFFD.
        expect(e).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
        expect(e).not.toContain('--');
        expect(e).not.toMatch(/[\x00-\x1f\x7f-\x9f\u2028\u2029]/);
        if (ascii) expect(e).toMatch(/^[\x20-\x7e]*$/);
      }),
      { numRuns: 3000 },
    );
  });
});

/** Text that is likely to hit comment syntax, plus the whole of UTF-16. */
const danger = fc.constantFrom('-', '--', '!', '>', '<', '<!--', '-->', '--!>', '<!-', '\r', '\n', '\\', '\u2028', '\ud800', '\udc00', 'é', '😀', ' ', '=', '[', ']');
const anyText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary-ascii' }),
  fc.string({ unit: danger }),
  fc.string({ unit: fc.oneof(danger, fc.string({ unit: 'binary', maxLength: 2 })) }),
);

interface Plan {
  machine: string;
  path: string;
  names: string[];
  commands: string[];
  warnings: string[];
}

const plan: fc.Arbitrary<Plan> = fc.record({
  machine: anyText,
  path: anyText,
  names: fc.array(anyText, { minLength: 1, maxLength: 6 }),
  commands: fc.array(anyText, { maxLength: 3 }),
  warnings: fc.array(anyText, { maxLength: 2 }),
});

/** A profile JSON with the names as a chain-and-siblings tree and the commands on the first step. */
function profileOf(p: Plan): ProfileJSON {
  const leaf = (name: string, i: number): TimingJSON => ({ name, startMs: i, durationMs: 1.25 * i, children: [] });
  const kids = p.names.map(leaf);
  // Nest every other name under the one before it, so depth markers are exercised too.
  const top: TimingJSON[] = [];
  kids.forEach((k, i) => (i % 2 === 1 ? top[top.length - 1]!.children.push(k) : top.push(k)));
  top[0]!.custom = p.commands.map((command, i) => ({ category: p.names[i % p.names.length]!, command, startMs: i, durationMs: i }));
  return {
    v: 1,
    id: '00000000-0000-4000-8000-000000000000',
    name: p.path,
    machine: p.machine,
    started: '2026-11-29T12:00:00.000Z',
    durationMs: 10,
    droppedSteps: 0,
    warnings: p.warnings,
    request: { method: 'GET', path: p.path },
    root: { name: p.path, startMs: 0, durationMs: 10, children: top },
  };
}

const PAGE = '<!DOCTYPE html><html><head><title>t</title></head><body>\n<p class="a">Hello</p><!-- app comment --><div>x</div>\n</body></html>';
const FRAGMENT = '<p>partial</p><span>no body tag</span>';

function body(doc: DefaultTreeAdapterMap['document']): Element {
  const html = doc.childNodes.find((n) => n.nodeName === 'html') as Element;
  return html.childNodes.find((n) => n.nodeName === 'body') as Element;
}

/** Comment data must not hold what ends or opens a comment (WHATWG and XML rules). */
function checkCommentData(data: string): void {
  expect(data.startsWith('>')).toBe(false);
  expect(data.startsWith('->')).toBe(false);
  expect(data).not.toContain('<!--');
  expect(data).not.toContain('-->');
  expect(data).not.toContain('--!>');
  expect(data.endsWith('<!-')).toBe(false);
  // XML (XHTML served as application/xhtml+xml): no `--` at all, no trailing `-`.
  expect(data).not.toContain('--');
  expect(data.endsWith('-')).toBe(false);
}

function checkInjected(page: string, comment: string): void {
  const before = parse(page);
  const after = parse(splice(page, comment) as string);
  const b0 = body(before).childNodes;
  const b1 = body(after).childNodes;
  // The comment goes before `</body>` (or at the end of a fragment): the body's last child.
  expect(b1).toHaveLength(b0.length + 1);
  const c = b1[b1.length - 1] as Comment;
  expect(c.nodeName).toBe('#comment');
  expect(`<!--${c.data}-->`).toBe(comment);
  checkCommentData(c.data);
  // Nothing else changed: without the comment the documents serialise the same.
  b1.pop();
  expect(serialize(after)).toBe(serialize(before));
}

/** The step and custom lines of a rendered tree, in order, with the escaped texts pulled out. */
function linesOf(text: string): string[] {
  return text.split('\n');
}

describe('no user text forges a line of the tree', () => {
  test('B1: step lines are exactly the steps, whatever the categories and commands say', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' })), { minLength: 1, maxLength: 4 }),
        async (customs) => {
          const c = fakeClock();
          const { profile } = await withProfile(
            'root',
            () =>
              step('only step', () => {
                for (const [category, command] of customs) timing(category, command, () => (c.t += 1));
                timing('> forged = 1.0ms', '> forged = 1.0ms', () => 0);
              }),
            fixed(c),
          );
          const stepLines = renderText(profile).split('\n').filter((l) => l.startsWith('>') && !l.startsWith('>> ['));
          expect(stepLines).toEqual(['> only step = ' + `${customs.length}.0ms`]);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('names kept between renders', () => {
  const one = (name: string, durationMs = 1.25): ProfileJSON => ({
    v: 1,
    id: '00000000-0000-4000-8000-000000000000',
    name: 'GET /',
    machine: 'web-1',
    started: '2026-11-29T12:00:00.000Z',
    durationMs: 10,
    droppedSteps: 0,
    warnings: [],
    root: { name: 'GET /', startMs: 0, durationMs: 10, children: [{ name, startMs: 0, durationMs, children: [] }] },
  });
  const stepLine = (json: ProfileJSON, ascii: boolean): string => renderText(json, { ascii }).split('\n')[2]!;

  test('a name is escaped for the mode of each render, whichever mode saw it first', () => {
    for (const name of ['prüfen 😀', 'café', 'x\u00a0y']) {
      const utf8 = `> ${escapeText(name, false)} = 1.3ms`;
      const ascii = `> ${escapeText(name, true)} = 1.3ms`;
      expect(utf8).not.toBe(ascii);
      for (const mode of [false, true, true, false, true]) expect(stepLine(one(name), mode)).toBe(mode ? ascii : utf8);
    }
  });

  test('past the names kept (512) and past the length kept (96), lines are still exact', () => {
    for (let i = 0; i < 1300; i++) expect(stepLine(one(`step ${i}`, i), false)).toBe(`> step ${i} = ${i}.0ms`);
    expect(stepLine(one('step 0', 2), false)).toBe('> step 0 = 2.0ms');
    const long = `${'a-'.repeat(60)}-end`;
    expect(stepLine(one(long), false)).toBe(`> ${escapeText(long, false)} = 1.3ms`);
    expect(stepLine(one(long), true)).toBe(`> ${escapeText(long, true)} = 1.3ms`);
  });

  test('the kept part of a line does not carry the marks or the flags of the line it came from', () => {
    const json = one('same');
    json.root.children[0]!.children = [{ name: 'same', startMs: 0, durationMs: 0.5, children: [], error: true }];
    json.root.children.push({ name: 'same', startMs: 1, durationMs: 30, syncMs: 25, blocking: true, children: [] });
    expect(renderText(json).split('\n').slice(2, 5)).toEqual(['> same = 1.3ms', '>> same = 0.5ms (error)', '> same = 30.0ms (blocking: 25.0ms sync)']);
  });
});

describe('B1: the comment is exactly one comment node for any text', () => {
  test('B1 property: the fan-out and blocking notes (names, categories and shapes of any text) stay on their line and inside the comment', () => {
    fc.assert(
      fc.property(anyText, anyText, fc.boolean(), fc.boolean(), (name, category, custom, ascii) => {
        const json: ProfileJSON = {
          v: 1,
          id: '00000000-0000-4000-8000-000000000000',
          name: 'GET /',
          machine: 'web-1',
          started: '2026-11-29T12:00:00.000Z',
          durationMs: 50,
          droppedSteps: 0,
          warnings: [],
          root: {
            name,
            startMs: 0,
            durationMs: 50,
            children: [],
            concurrency: 1,
            serialized: true,
            fanOut: custom ? { name, count: 5, category, similar: 1 } : { name, count: 5 },
            heldMs: 30,
            blocking: true,
            blockingAmbiguous: true,
          },
        };
        const comment = renderHtmlComment(json, { ascii });
        checkInjected(PAGE, comment);
        if (ascii) expect(comment).toMatch(/^[\n\x20-\x7e]*$/);
        const lines = renderText(json, { ascii }).split('\n');
        // Header, the root's line, the empty end: the notes added no line.
        expect(lines).toHaveLength(3);
        expect(lines[1]).toMatch(/ \(ambiguous blocking: 30\.0ms held\) \(serialized: 5 . .* ran one at a time\)$/);
      }),
      { numRuns: 1000 },
    );
  });

  test('B1 property: arbitrary names, commands, path, machine and warnings (2,000 runs)', () => {
    fc.assert(
      fc.property(plan, fc.boolean(), (p, ascii) => {
        const json = profileOf(p);
        const comment = renderHtmlComment(json, { ascii });
        checkInjected(PAGE, comment);
        checkInjected(FRAGMENT, comment);
        if (ascii) expect(comment).toMatch(/^[\n\x20-\x7e]*$/);
        else expect(comment).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]/);

        // Round trip: every line gives back its text exactly.
        const lines = linesOf(renderText(json, { ascii }));
        const header = /^(.*) at 2026-11-29T12:00:00\.000Z$/.exec(lines[0]!)!;
        expect(unescapeText(header[1]!)).toBe(p.machine);
        const path = /^Path: GET (.*)$/.exec(lines[1]!)!;
        expect(unescapeText(path[1]!)).toBe(p.path);
        let i = 2;
        const walk = (t: TimingJSON, depth: number): void => {
          const m = /^(>*) (.*) = (\d+\.\d)ms$/.exec(lines[i++]!)!;
          expect(m[1]).toBe('>'.repeat(depth));
          expect(unescapeText(m[2]!)).toBe(t.name);
          for (const c of t.custom ?? []) {
            const cm = /^(>*) \[(.*?)\] (.*) = (\d+\.\d)ms$/.exec(lines[i++]!)!;
            expect(cm[1]).toBe('>'.repeat(depth + 1));
            // The category cannot hold a raw `]` that would end it early unless the name had one.
            expect(unescapeText(`${cm[2]}] ${cm[3]}`)).toBe(`${c.category}] ${c.command}`);
          }
          t.children.forEach((c) => walk(c, depth + 1));
        };
        walk(json.root, 0);
        for (const w of p.warnings) expect(unescapeText(/^! (.*)$/.exec(lines[i++]!)![1]!)).toBe(w);
        expect(lines.slice(i)).toEqual(['']);
      }),
      { numRuns: 2000 },
    );
  });

  test('B1 property through real steps: names shorter than the cut length come back exactly', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 150 }), fc.string({ unit: danger, maxLength: 60 })), { minLength: 1, maxLength: 5 }), async (names) => {
        const { profile } = await withProfile('job', () => {
          for (const n of names) step(n, () => timing('sql', n, () => 0));
        });
        const comment = renderHtmlComment(profile);
        checkInjected(PAGE, comment);
        const lines = linesOf(renderText(profile)).filter((l) => l.startsWith('> '));
        expect(lines.map((l) => unescapeText(/^> (.*) = \d+\.\dms$/.exec(l)![1]!))).toEqual(names);
      }),
      { numRuns: 300 },
    );
  });

  test('B1 property through real custom timings: any category and command (summaries included) stay in one comment', async () => {
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: danger, maxLength: 20 }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(text, text), { minLength: 1, maxLength: 6 }), fc.boolean(), async (calls, ascii) => {
        const { profile } = await withProfile('job', () => {
          step('s', () => {
            // Twice each, so duplicate and similar groups are rendered too.
            for (const [category, command] of [...calls, ...calls]) timing(category, command, () => 0);
          });
        });
        const comment = renderHtmlComment(profile, { ascii });
        checkInjected(PAGE, comment);
        checkInjected(FRAGMENT, comment);
        if (ascii) expect(comment).toMatch(/^[\n\x20-\x7e]*$/);
      }),
      { numRuns: 500 },
    );
  });

  const nasty = ['-->', '--!>', '<!--', '>', '->', 'x<!-', '<!-', '\r\n', '\u2028', '\ud800', '\udc00x', '-', '--', '</body>', '<script>alert(1)</script>'];
  for (const name of nasty) {
    test(`B1: step name ${JSON.stringify(name)} as every text field stays inside one comment`, () => {
      const json = profileOf({ machine: name, path: name, names: [name, name + '-', '-' + name], commands: [name], warnings: [name] });
      for (const ascii of [false, true]) {
        const comment = renderHtmlComment(json, { ascii });
        checkInjected(PAGE, comment);
        checkInjected(FRAGMENT, comment);
      }
    });
  }

  test('ascii mode output is pure printable ASCII plus newlines', () => {
    fc.assert(
      fc.property(plan, (p) => {
        expect(renderHtmlComment(profileOf(p), { ascii: true })).toMatch(/^[\n\x20-\x7e]*$/);
      }),
      { numRuns: 500 },
    );
  });
});
