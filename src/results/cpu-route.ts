import { readCpuProfile } from './flame.js';

export const CPUPROFILE = '.cpuprofile';

/**
 * `base/<id>.cpuprofile`: the body of the samples of a CPU-sampled request in Chrome DevTools'
 * format (it opens in DevTools' Performance panel and in speedscope), served as a download under
 * the same rules as the page (the owner's own, a developer's request). Null for a profile without
 * samples (not sampled, or over the size bound): the app's own 404, as for any path we do not serve.
 */
export function cpuProfileBody(stored: unknown): string | null {
  const cpu = (stored as { cpu?: { profile?: unknown } } | null)?.cpu;
  const p = readCpuProfile(cpu?.profile);
  return p === null ? null : JSON.stringify(p);
}

/** The download's headers; `id` is a checked UUID. */
export function cpuProfileHeaders(id: string): Record<string, string> {
  return { 'Content-Disposition': `attachment; filename="${id}${CPUPROFILE}"` };
}
