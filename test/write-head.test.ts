import http from 'node:http';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { GivenHeaders } from '../src/http/write-head.js';

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
  test('refuses exactly the values res.setHeader refuses, with the same code, so writeHead never throws for us', () => {
    const value = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme-ascii' }), fc.constantFrom('a\r\nSet-Cookie: x=1', 'caf\u00e9', '\u2603', '\u0000', '\t ok'));
    fc.assert(
      fc.property(fc.oneof(value, fc.array(value, { maxLength: 3 })), (v) => {
        const given = new GivenHeaders({});
        const expected = refused(() => response().setHeader('Server-Timing', v));
        expect(refused(() => given.setHeader('Server-Timing', v))).toBe(expected);
        expect(given.h['server-timing']).toBe(expected === null ? v : undefined);
        // Whatever was accepted, writeHead accepts too.
        if (expected === null) expect(refused(() => response().writeHead(200, given.h as http.OutgoingHttpHeaders))).toBeNull();
      }),
      { numRuns: 500 },
    );
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
