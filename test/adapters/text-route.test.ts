/**
 * `/_miniprof/<id>.txt` (issue 59 item 13) on every adapter, over real sockets: a developer gets
 * the profile's text tree, the very text of the comment the page carried; everyone else gets the
 * app's own answer for that path, byte for byte, as for the page and the JSON.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderText, step, timing, type ProfileJSON } from '../../src/index.js';
import { memoryStore } from '../../src/results/memory-store.js';
import { PAGE_HEADERS } from '../../src/results/pages.js';
import { closeServers, raw, serve, withoutDate } from '../helpers/http.js';
import { ADAPTERS, type Routes } from './apps.js';

const PAGE = '<!doctype html><html><head><title>t</title></head><body><h1>posts</h1></body></html>';
const ROUTES: Routes = {
  '/html': async () => {
    await step('load posts per author', async () => {
      for (const id of [1, 2, 3]) await timing('sql', `select title from posts where author_id = ${id}`, async () => {});
    });
    return { headers: { 'content-type': 'text/html; charset=utf-8' }, body: PAGE };
  },
};
const COMMENT = /<!--\n([^]*?)-->/;

describe.each(ADAPTERS)('$name', (adapter) => {
  let basePort = 0;
  let devPort = 0;

  beforeAll(async () => {
    basePort = await serve(await adapter.listener(null, ROUTES));
    devPort = await serve(await adapter.listener({ isDeveloper: adapter.byHeader('x-dev'), machine: 'web-1', results: { store: memoryStore() } }, ROUTES));
  });
  afterAll(() => closeServers());

  it('13: a developer reads the text tree with curl; anyone else gets the app’s own 404', async () => {
    const page = await raw(devPort, { path: '/html', headers: { 'x-dev': '1' } });
    const id = page.headers['x-miniprof-id']![0]!;
    const comment = COMMENT.exec(page.payload.toString())![1]!;
    const path = `/_miniprof/${id}.txt`;
    // Saved when the response closed: asked again until it is there.
    let txt = await raw(devPort, { path, headers: { 'x-dev': '1' } });
    for (let i = 0; i < 100 && txt.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      txt = await raw(devPort, { path, headers: { 'x-dev': '1' } });
    }
    expect(txt.status).toBe(200);
    expect(txt.headers['content-type']).toEqual(['text/plain; charset=utf-8']);
    for (const [k, v] of Object.entries(PAGE_HEADERS)) expect(txt.headers[k.toLowerCase()]).toEqual([v]);
    // The stored profile's text tree, exactly; the comment's, but for the lines measured again
    // when the profile is sealed, after the comment was sent: the event loop's largest delay, the
    // time the process did not run, and miniprof's own time (which by then includes the comment).
    const json = await raw(devPort, { path: `/_miniprof/${id}.json`, headers: { 'x-dev': '1' } });
    expect(txt.payload.toString()).toBe(renderText(JSON.parse(json.payload.toString()) as ProfileJSON));
    const steady = (t: string) => t.replace(/^! (?:event loop delayed|the process did not run) .*\n/gm, '').replace(/^miniprof's own time: .*\n/m, '');
    expect(steady(txt.payload.toString())).toBe(steady(comment));
    // (On a loaded machine the event-loop monitor may add a blocking mark before it: not ours.)
    // (At depth 1, or 2 under an adapter's automatic handler step.)
    expect(comment).toMatch(/\n>+ load posts per author = \d+\.\dms (?:\([^()]*blocking[^()]*\) )?\(N\+1: 3 × select title from posts where author_id = \?\)\n/);
    const head = await raw(devPort, { method: 'HEAD', path, headers: { 'x-dev': '1' } });
    expect([head.status, head.payload.length]).toEqual([200, 0]);
    // Not a developer (no header), or an id that is not this developer's: the app's own answer.
    for (const p of [path, `/_miniprof/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}.txt`, `/_miniprof/${id}.TXT`]) {
      const headers = p === path ? undefined : { 'x-dev': '1' };
      const got = await raw(devPort, { path: p, headers });
      expect(got.status, p).toBe(404);
      expect(withoutDate(got.bytes).toString('latin1'), p).toBe(withoutDate((await raw(basePort, { path: p, headers })).bytes).toString('latin1'));
    }
  });
});
