/**
 * `new Date(ms).toISOString()` for a profile's start, without the Date: V8 formats it through
 * printf (~6,800 instructions per call on Node 20, bench/instructions). Requests of one second
 * share everything up to the milliseconds, so that prefix is kept, and the day's within it:
 * a call in the same second is one concatenation of two flat strings, which the profile's
 * `flat` copies once, rather than a tree of nine.
 */
let dayStart = NaN;
let dayPrefix = '';
let secondStart = NaN;
let secondPrefix = '';

const TWO: string[] = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : `${i}`));
/** `mmmZ` for each millisecond, made when first used. */
const MILLIS: (string | undefined)[] = new Array(1000).fill(undefined);

/** `ms` must be a valid time (finite, |ms| <= 8.64e15), as `Profile.startedAt` is. */
export function isoTime(ms: number): string {
  // A Date keeps whole milliseconds, truncated toward zero.
  const m = Math.trunc(ms) + 0;
  const f = m - secondStart;
  if (f >= 0 && f < 1000) return secondPrefix + millis(f);
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
  secondStart = m - (t % 1000);
  secondPrefix = `${dayPrefix}${TWO[h]}:${TWO[min]}:${TWO[s]}.`;
  return secondPrefix + millis(t % 1000);
}

function millis(f: number): string {
  return (MILLIS[f] ??= `${TWO[Math.floor(f / 10)]}${f % 10}Z`);
}
