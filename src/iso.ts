/**
 * `new Date(ms).toISOString()` for a profile's start, without the Date: V8 formats it through
 * printf (~6,800 instructions per call on Node 20, bench/instructions). Requests of one day share
 * the date, so only the time of day is written here; the day's prefix is cached.
 */
let dayStart = NaN;
let dayPrefix = '';

const TWO: string[] = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : `${i}`));

/** `ms` must be a valid time (finite, |ms| <= 8.64e15), as `Profile.startedAt` is. */
export function isoTime(ms: number): string {
  // A Date keeps whole milliseconds, truncated toward zero.
  const m = Math.trunc(ms) + 0;
  let t = m - dayStart;
  if (!(t >= 0 && t < 86_400_000)) {
    dayStart = Math.floor(m / 86_400_000) * 86_400_000;
    const day = new Date(dayStart).toISOString();
    // 'YYYY-MM-DDT', or '+YYYYYY-MM-DDT' beyond the year 9999 (and '-' before year 0).
    dayPrefix = day.slice(0, day.indexOf('T') + 1);
    t = m - dayStart;
  }
  const h = Math.floor(t / 3_600_000);
  const min = Math.floor(t / 60_000) % 60;
  const s = Math.floor(t / 1000) % 60;
  const f = t % 1000;
  return `${dayPrefix}${TWO[h]}:${TWO[min]}:${TWO[s]}.${TWO[Math.floor(f / 10)]}${f % 10}Z`;
}
