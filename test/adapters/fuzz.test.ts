/**
 * Property tests against every adapter (test/adapters/apps.ts) on real sockets: any step names,
 * categories and commands give a page with exactly one added comment node (parse5 as the oracle)
 * and a Server-Timing value Node accepts; any options give a working app or a coded TypeError at
 * setup, never anything else.
 */
import http from 'node:http';
import fc from 'fast-check';
import { parse } from 'parse5';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openProfiles } from '../../src/core/context.js';
import { HTTP_KEYS } from '../../src/http/config.js';
import { step, timing } from '../../src/index.js';
import { catchEscapes } from '../helpers/escapes.js';
import { closeServers, raw, serve, waitFor } from '../helpers/http.js';
import { ADAPTERS, type Routes } from './apps.js';

const PAGE = '<!doctype html><html><head></head><body><p>page</p></body></html>';
const text = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme', maxLength: 300 }), fc.constantFrom('-->', '--!>', '<!--', '\r\nSet-Cookie: x=1', '</body>', 'total', '\u2028'));
const anyValue: fc.Arbitrary<unknown> = fc.oneof(text, fc.anything(), fc.func(fc.anything()));

const escaped = catchEscapes();
afterAll(() => closeServers());

describe.each(ADAPTERS)('$name', (a) => {
  let port = 0;
  let current: unknown[][] = [];
  const reports: unknown[] = [];
  beforeAll(async () => {
    const routes: Routes = {
      '/': async () => {
        for (const [name, category, command] of current) {
          await step(name as string, async () => timing(category as string, command as string, () => null));
        }
        return { headers: { 'content-type': 'text/html; charset=utf-8' }, body: PAGE };
      },
    };
    port = await serve(await a.listener({ isDeveloper: () => true, onInternalError: (e: unknown) => reports.push(e) }, routes));
  });

  test('B1, B2: any step names, categories and commands give the page plus one comment node and a valid Server-Timing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(text, text, text), { minLength: 1, maxLength: 5 }), async (inputs) => {
        current = inputs;
        const r = await raw(port, { path: '/' });
        expect(r.status).toBe(200);
        const body = r.payload.toString('utf8');
        const doc = parse(body);
        const el = (doc.childNodes[1] as unknown as { childNodes: Array<{ childNodes: Array<{ nodeName: string }> }> }).childNodes[1]!;
        expect(el.childNodes.map((n) => n.nodeName)).toEqual(['p', '#comment']);
        expect(body.replace(/<!--[\s\S]*?-->/, '')).toBe(PAGE);
        const st = r.headers['server-timing']!.join(', ');
        expect(st).toMatch(/^[\x20-\x7e]*$/);
        expect(() => http.validateHeaderValue('Server-Timing', st)).not.toThrow();
        if (r.headers['content-length'] !== undefined) expect(Number(r.headers['content-length'][0])).toBe(r.payload.byteLength);
        expect(r.headers['set-cookie']).toBeUndefined();
      }),
      { numRuns: 60 },
    );
    await waitFor(() => openProfiles() === 0, 3000, 'every profile sealed');
    expect(reports).toEqual([]);
    expect(escaped).toEqual([]);
  });

  test('any options: the app is made, or setup fails with a coded TypeError naming the option', async () => {
    const options = fc.dictionary(fc.constantFrom(...HTTP_KEYS, 'nope'), anyValue, { maxKeys: 3 });
    await fc.assert(
      fc.asyncProperty(options, async (o) => {
        try {
          await a.listener(o, {});
        } catch (err) {
          expect(err).toBeInstanceOf(TypeError);
          expect(['MINIPROF_ERR_INVALID_OPTION', 'MINIPROF_ERR_UNKNOWN_OPTION']).toContain((err as { code?: string }).code);
          expect((err as Error).message).toMatch(/^miniprof: /);
        }
      }),
      { numRuns: 150 },
    );
  });
});
