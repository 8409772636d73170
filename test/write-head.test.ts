import http from 'node:http';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { closeProfile, openProfiles, runInProfile } from '../src/core/context.js';
import { unwatch, watched } from '../src/http/deadline.js';
import { resolveHttp } from '../src/http/config.js';
import { ProfiledResponse } from '../src/http/response.js';
import { GivenHeaders, writeHeadWith, type ResMethod } from '../src/http/write-head.js';
import { step } from '../src/core/step.js';

/** A response with no socket: setHeader and writeHead work on it all the same. */
function response(): http.ServerResponse {
  const req = new http.IncomingMessage(null as never);
  req.method = 'GET';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  return new http.ServerResponse(req);
}

function refused(fn: () => void): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as { code?: string }).code ?? 'no code';
  }
}

describe('GivenHeaders (the headers given to writeHead, with ours merged in)', () => {
  /** A developer's profile with the given step names, its outputs rendered as at a whole body. */
  function profiled(names: string[], owner: string | undefined): ProfiledResponse {
    const cfg = resolveHttp({ isDeveloper: () => true, results: owner === undefined ? false : {} }, 'test', () => undefined);
    const state = new ProfiledResponse(cfg as never, 'GET', '/', owner);
    runInProfile(state.profile, () => {
      for (const n of names) step(n, () => null);
    });
    state.body({ getHeader: () => undefined }, 200, '<p>x</p>');
    // Closed at once: the headers are rendered from the frozen JSON, and an open profile would
    // keep the promise hooks, the loop sampler and the deadline timer going for the next tests.
    unwatch(state);
    closeProfile(state.profile);
    return state;
  }

  test("what miniprof writes is accepted by writeHead, for any step names and whatever valid Link and Server-Timing the app gave", () => {
    // Values Node accepts in a header (tab, printable ASCII, Latin-1), as the app may have set them.
    const valid = fc.string({ unit: fc.oneof(fc.constant('\t'), fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c))) });
    const appValue = fc.option(fc.oneof(valid, fc.array(valid, { minLength: 1, maxLength: 3 })), { nil: undefined });
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 5 }), appValue, appValue, fc.boolean(), (names, link, timing, results) => {
        const state = profiled(names, results ? 'owner' : undefined);
        const h: Record<string, unknown> = {};
        if (link !== undefined) h['link'] = link;
        if (timing !== undefined) h['server-timing'] = timing;
        const given = new GivenHeaders({ ...h });
        state.writeHeaders(given);
        expect(refused(() => response().writeHead(200, given.h as http.OutgoingHttpHeaders))).toBeNull();
        expect(typeof given.h['server-timing'] === 'string' || Array.isArray(given.h['server-timing'])).toBe(true);
        expect(given.h['cache-control']).toBe('private, no-store');
        expect(given.h['x-miniprof-id']).toBe(results ? state.profile.id : undefined);
      }),
      { numRuns: 300 },
    );
    expect(openProfiles()).toBe(0);
    expect(watched()).toBe(0);
  });

  test("an invalid header of the app's is refused by writeHead with the same code as without miniprof", () => {
    for (const [name, bad] of [['link', 'a\r\nSet-Cookie: x=1'], ['server-timing', ['ok', 'caf\u00e9\u2603']]] as [string, string | string[]][]) {
      const without = refused(() => response().writeHead(200, { [name]: bad }));
      expect(without).toBe('ERR_INVALID_CHAR');
      const given = new GivenHeaders({ [name]: bad });
      profiled(['s'], 'owner').writeHeaders(given);
      expect(refused(() => response().writeHead(200, given.h as http.OutgoingHttpHeaders))).toBe(without);
    }
  });

  test('a status code writeHead refuses leaves statusCode as it was, as it does without miniprof', () => {
    const args = (function (..._a: unknown[]) {
      return arguments;
    })(42);
    const plain = response();
    expect(refused(() => plain.writeHead(42))).toBe('ERR_HTTP_INVALID_STATUS_CODE');
    const res = response();
    expect(refused(() => writeHeadWith(profiled(['s'], undefined), res, args, http.ServerResponse.prototype.writeHead as ResMethod))).toBe('ERR_HTTP_INVALID_STATUS_CODE');
    expect(res.statusCode).toBe(plain.statusCode);
  });

  test('names are looked up and removed in lowercase, and set under their lowercase form', () => {
    const given = new GivenHeaders({ etag: '"1"', link: '</a>; rel=preload' });
    expect(given.getHeader('link')).toBe('</a>; rel=preload');
    given.removeHeader('etag');
    given.removeHeader('x-absent');
    given.setHeader('Cache-Control', 'private, no-store');
    expect(given.h).toEqual({ link: '</a>; rel=preload', 'cache-control': 'private, no-store' });
  });
});
