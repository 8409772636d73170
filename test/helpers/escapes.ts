import { afterAll, beforeAll } from 'vitest';

/**
 * Record every uncaught exception and unhandled rejection while the calling suite runs, so a
 * test can assert that the profiler let nothing escape (`expect(escaped).toEqual([])`).
 */
export function catchEscapes(): unknown[] {
  const escaped: unknown[] = [];
  const onUncaught = (err: unknown) => escaped.push(['uncaughtException', err]);
  const onUnhandled = (err: unknown) => escaped.push(['unhandledRejection', err]);
  beforeAll(() => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUnhandled);
  });
  afterAll(() => {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUnhandled);
  });
  return escaped;
}
