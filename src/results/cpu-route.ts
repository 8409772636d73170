import type { ResultsReply } from './routes.js';
import { readCpuProfile } from './flame.js';

export const CPUPROFILE = '.cpuprofile';

type Reply = (status: number, type: string, body: string, extra?: Record<string, string>) => ResultsReply;

/**
 * `base/<id>.cpuprofile`: the samples of a CPU-sampled request in Chrome DevTools' format, as a
 * download (it opens in DevTools' Performance panel and in speedscope). Served under the same
 * rules as the page (the owner's own, a developer's request); a profile without samples (not
 * sampled, or over the size bound) is null: the app's own 404, as for any path we do not serve.
 */
export function cpuProfileReply(stored: unknown, id: string, reply: Reply): ResultsReply | null {
  const cpu = (stored as { cpu?: { profile?: unknown } } | null)?.cpu;
  const p = readCpuProfile(cpu?.profile);
  if (p === null) return null;
  return reply(200, 'application/json', JSON.stringify(p), { 'Content-Disposition': `attachment; filename="${id}${CPUPROFILE}"` });
}
