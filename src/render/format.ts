/** Milliseconds with exactly one decimal, without `toFixed` (this runs once per line). */
export function ms1(ms: number): string {
  if (!(ms > 0)) return '0.0';
  const tenths = Math.round(ms * 10);
  return `${Math.floor(tenths / 10)}.${tenths % 10}`;
}
