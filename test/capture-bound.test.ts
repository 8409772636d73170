/**
 * Capture cannot be switched off by a visitor (issue 57 item 5): `maxPerMinute` holds back what
 * was kept, never what is open, and the open sampled requests have their own bound
 * (`capture.maxOpen`) that requests held open cannot fill for longer than `slowerThanMs`. Every
 * adapter of test/adapters/apps.ts, on real sockets, with long polls held open by real clients
 * (each given up by the test, or by the route after 10 s at most).
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openProfiles } from '../src/core/context.js';
import { currentProfile } from '../src/index.js';
import { memoryStore } from '../src/results/memory-store.js';
import { CAPTURE_OWNER } from '../src/results/store.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';
import { ADAPTERS, type Routes } from './adapters/apps.js';

const PAGE = '<html><body>done</body></html>';

/** Whether the last `/probe` ran inside a profile (it was sampled). */
let probed: boolean | null = null;

const ROUTES: Routes = {
  // A long poll: the head goes out, then nothing until the client leaves (10 s at most).
  '/poll': async () => ({ headers: { 'content-type': 'text/plain' }, chunks: ['late'], everyMs: 10_000 }),
  '/slow': async () => {
    await new Promise((r) => setTimeout(r, 250));
    return { headers: { 'content-type': 'text/html; charset=utf-8' }, body: PAGE };
  },
  '/probe': async () => {
    probed = currentProfile() !== undefined;
    return { headers: { 'content-type': 'text/html; charset=utf-8' }, body: PAGE };
  },
};

/** Open `/poll` on a socket of its own and leave it open; the test destroys it. */
function hold(port: number): net.Socket {
  const s = net.connect(port, '127.0.0.1', () => s.write('GET /poll HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
  s.on('error', () => {});
  held.push(s);
  return s;
}
const held: net.Socket[] = [];

afterEach(async () => {
  for (const s of held.splice(0)) s.destroy();
  await closeServers();
  await waitFor(() => openProfiles() === 0, 5000, 'every profile closed');
});

describe.each(ADAPTERS)('$name', (adapter) => {
  it('a visitor holding maxPerMinute sampled long polls open does not stop capture: only kept profiles count', async () => {
    const store = memoryStore();
    const faults: unknown[] = [];
    const options = { isDeveloper: adapter.byHeader('x-dev'), capture: { rate: 1, slowerThanMs: 200, maxPerMinute: 3 }, results: { store }, onInternalError: (e: unknown) => faults.push(e) };
    const port = await serve(await adapter.listener(options, ROUTES));
    for (let i = 0; i < 3; i++) hold(port);
    await waitFor(() => openProfiles() === 3, 5000, 'three long polls sampled and open');
    const r = await raw(port, { path: '/slow' });
    expect(r.payload.toString()).toBe(PAGE);
    await waitFor(() => openProfiles() === 3, 5000, "the slow request's profile closed");
    expect((await store.list(CAPTURE_OWNER, 10)).map((s) => s.path)).toEqual(['/slow']);
    expect(faults).toEqual([]);
  });

  it('maxOpen: full of young long polls, a request is not sampled; once the oldest has been open slowerThanMs it is sealed early and kept, and the new one sampled', async () => {
    const store = memoryStore();
    const faults: unknown[] = [];
    // The profiles' clock, moved by the test: how long a poll has been open is the test's to say.
    let t = 0;
    const capture = { rate: 1, slowerThanMs: 300, maxPerMinute: 100, maxOpen: 2 };
    const options = { isDeveloper: adapter.byHeader('x-dev'), capture, clock: () => t, results: { store }, onInternalError: (e: unknown) => faults.push(e) };
    const port = await serve(await adapter.listener(options, ROUTES));
    hold(port);
    await waitFor(() => openProfiles() === 1, 5000, 'the first long poll open');
    t = 100;
    hold(port);
    await waitFor(() => openProfiles() === 2, 5000, 'the second long poll open');
    t = 299;
    probed = null;
    await raw(port, { path: '/probe' });
    expect(probed, 'full, the oldest open for 299 ms: not sampled').toBe(false);
    expect(openProfiles()).toBe(2);
    t = 300;
    await raw(port, { path: '/probe' });
    expect(probed, 'the oldest open for 300 ms makes room').toBe(true);
    await waitFor(() => openProfiles() === 1, 5000, 'the probe closed, the first poll sealed');
    const [first] = await store.list(CAPTURE_OWNER, 10);
    expect(first).toMatchObject({ path: '/poll', durationMs: 300, flags: ['warnings'] });
    expect((await store.get(CAPTURE_OWNER, first!.id))!.warnings).toEqual(['sealed early: capture.maxOpen sampled requests were open when another was sampled']);
    // The probe was fast (0 ms on this clock) and let go; the second poll, still open, is kept
    // when it closes at 500 (open 400 ms).
    t = 500;
    for (const s of held.splice(0)) s.destroy();
    await waitFor(() => openProfiles() === 0, 5000, 'the second poll closed');
    expect((await store.list(CAPTURE_OWNER, 10)).map((s) => [s.path, s.durationMs])).toEqual([
      ['/poll', 400],
      ['/poll', 300],
    ]);
    expect(faults).toEqual([]);
  });
});
