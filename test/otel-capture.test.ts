/**
 * miniprof/otel's `exportProfiles` with `capture`: a sampled request's profile is exported only
 * when capture keeps it. One that is dropped (fast, no error) is kept nowhere, so no trace of it
 * is sent either. Real Express on a real socket, the real OpenTelemetry SDK and an in-memory
 * exporter; an injected clock says which request was slow.
 */
import { afterAll, afterEach, expect, test } from 'vitest';
import { trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import express, { type RequestHandler } from 'express';
import { miniprof } from '../adapters/express.js';
import { MiniprofSpanProcessor } from '../adapters/otel.js';
import { openProfiles } from '../src/core/context.js';
import { memoryStore, step } from '../src/index.js';
import { CAPTURE_OWNER } from '../src/results/store.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new MiniprofSpanProcessor({ exportProfiles: true }), new SimpleSpanProcessor(exporter)] });
provider.register({ contextManager: new AsyncLocalStorageContextManager() });

afterEach(() => closeServers());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
});

test('exportProfiles: a kept captured profile is exported, a dropped one is not; a developer\'s always is', async () => {
  const faults: unknown[] = [];
  const store = memoryStore();
  const clock = { t: 0 };
  const app = express();
  app.use(
    miniprof({
      isDeveloper: (req) => req.headers['x-dev'] === '1',
      capture: { rate: 1, slowerThanMs: 100, maxPerMinute: 100 },
      results: { store },
      clock: () => clock.t,
      onInternalError: (err) => faults.push(err),
    }) as RequestHandler,
  );
  app.get('/took/:ms', (req, res) => {
    step(`work ${req.params.ms}`, () => {
      clock.t += Number(req.params.ms);
    });
    res.send('ok');
  });
  const port = await serve(app as never);

  const settle = async () => {
    await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
    // The export runs one turn after the seal.
    await new Promise((r) => setImmediate(r));
  };
  await raw(port, { path: '/took/5' });
  await settle();
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([]);
  expect(await store.list(CAPTURE_OWNER, 10)).toEqual([]);

  await raw(port, { path: '/took/150' });
  await settle();
  // No request span is active: the profile's root is the trace's root.
  // Someone else's request: its path's number segments are masked, in the trace too (issue 57).
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['work 150', 'GET /took/?']);
  expect((await store.list(CAPTURE_OWNER, 10)).map((s) => s.path)).toEqual(['/took/?']);
  exporter.reset();

  await raw(port, { path: '/took/5', headers: { 'x-dev': '1' } });
  await settle();
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['work 5', 'GET /took/5']);
  expect(faults).toEqual([]);
});
