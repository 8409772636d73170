import dc from 'node:diagnostics_channel';
import { describe, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import Fastify from 'fastify';

// Subscriptions are process-wide, so this file runs its cases in order, in its own fork.
function subscribed(): boolean[] {
  return [
    dc.hasSubscribers('undici:request:create'),
    dc.hasSubscribers('http.client.request.start'),
    dc.tracingChannel('ioredis:command').start.hasSubscribers,
    dc.tracingChannel('node-redis:command').start.hasSubscribers,
    dc.tracingChannel('mysql2:query').start.hasSubscribers,
  ];
}

describe('when the adapters subscribe', () => {
  test('never when nobody can be profiled (production without isDeveloper), nor with instrument: false', async () => {
    const env = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      expressMiniprof();
      await Fastify().register(fastifyMiniprof).ready();
    } finally {
      process.env.NODE_ENV = env;
    }
    expressMiniprof({ isDeveloper: () => true, instrument: false });
    expect(() => expressMiniprof({ isDeveloper: () => true, instrument: 'yes' as never })).toThrow(
      expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }),
    );
    // An invalid option elsewhere must not leave subscriptions behind either.
    expect(() => expressMiniprof({ isDeveloper: () => true, htmlComment: 1 as never })).toThrow(TypeError);
    expect(subscribed()).toEqual([false, false, false, false, false]);
  });

  test('at setup, once, when someone can be profiled', async () => {
    await Fastify().register(fastifyMiniprof, { isDeveloper: () => true }).ready();
    expect(subscribed()).toEqual([true, true, true, true, true]);
  });
});
