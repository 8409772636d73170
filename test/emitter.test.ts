/**
 * D3: EventEmitter listeners run in the context of whoever emits, not of whoever listened
 * (nodejs/node#33723). miniprof ships no bind helper (DESIGN's public API is fixed); these tests
 * pin down what happens instead: a step in an unbound listener is attributed to the emitting
 * request (or is a pass-through when nothing is profiled), never to the listener's own request and
 * never with an exception; Node's `AsyncResource.bind` restores the listener's request, and once
 * that request is sealed the bound listener's steps are pass-throughs that change nothing.
 */
import { AsyncResource } from 'node:async_hooks';
import { EventEmitter } from 'node:events';
import express from 'express';
import { afterEach, describe, expect, test } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { currentProfile, step, withProfile, type Profile, type TimingJSON } from '../src/index.js';
import { deferred } from './helpers/clock.js';
import { closeServers, get, serve, waitFor } from './helpers/http.js';
import { openProfiles } from '../src/core/context.js';

function names(t: TimingJSON): string[] {
  return t.children.flatMap((c) => [c.name, ...names(c)]);
}

afterEach(async () => {
  await closeServers();
});

describe('D3: listeners and the emitter\'s context', () => {
  test('D3: a listener registered in profile A and emitted from B records into B; AsyncResource.bind records into A', async () => {
    const bus = new EventEmitter();
    const registered = deferred();
    const emitted = deferred();
    let calls = 0;
    const a = withProfile('A', async () => {
      bus.on('ping', () => step('unbound listener', () => ++calls));
      bus.on('ping', AsyncResource.bind(() => step('bound listener', () => ++calls)));
      registered.resolve();
      await emitted.promise;
    });
    const b = withProfile('B', async () => {
      await registered.promise;
      step('emit', () => bus.emit('ping'));
      emitted.resolve();
    });
    const [{ profile: pa }, { profile: pb }] = await Promise.all([a, b]);
    expect(calls).toBe(2);
    expect(names(pa.toJSON().root)).toEqual(['bound listener']);
    expect(names(pb.toJSON().root)).toEqual(['emit', 'unbound listener']);
    // Emitted again after both were sealed, and from outside any profile: pass-throughs.
    const before = [JSON.stringify(pa.toJSON()), JSON.stringify(pb.toJSON())];
    expect(bus.emit('ping')).toBe(true);
    await withProfile('C', () => bus.emit('ping'));
    expect(calls).toBe(6);
    expect([JSON.stringify(pa.toJSON()), JSON.stringify(pb.toJSON())]).toEqual(before);
  });

  test('D3: over real sockets (Express): the listener of request A fires in request B, lands in B or nowhere, never throws', async () => {
    const bus = new EventEmitter();
    const registered = deferred();
    const emitted = deferred();
    const profiles = new Map<string, Profile>();
    const reports: unknown[] = [];
    const app = express();
    app.use(miniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', onInternalError: (e) => reports.push(e) }));
    app.get('/a', async (_req, res) => {
      profiles.set('a', currentProfile()!);
      bus.on('ping', () => step('listener of A', () => {}));
      bus.on('ping', AsyncResource.bind(() => step('bound listener of A', () => {})));
      registered.resolve();
      await emitted.promise;
      res.type('html').send('<body>a</body>');
    });
    app.get('/b', async (req, res) => {
      const p = currentProfile();
      if (p !== undefined) profiles.set(String(req.query.as), p);
      await registered.promise;
      bus.emit('ping');
      emitted.resolve();
      res.type('html').send('<body>b</body>');
    });
    const port = await serve(app);
    const [ra, rb] = await Promise.all([get(port, '/a', { headers: { 'x-dev': '1' } }), get(port, '/b?as=b', { headers: { 'x-dev': '1' } })]);
    // And from a request nobody profiles: the listener's steps are pass-throughs.
    const rc = await get(port, '/b?as=c');
    expect([ra.status, rb.status, rc.status]).toEqual([200, 200, 200]);
    await waitFor(() => openProfiles() === 0, 3000, 'profiles sealed');
    expect(names(profiles.get('a')!.toJSON().root)).toEqual(['bound listener of A']);
    expect(names(profiles.get('b')!.toJSON().root)).toEqual(['listener of A']);
    expect(profiles.has('c')).toBe(false);
    expect(rb.body.toString()).toContain('> listener of A = ');
    expect(rc.body.toString()).toBe('<body>b</body>');
    expect(reports).toEqual([]);
  });
});
