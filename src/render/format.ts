const DOT = ['.0', '.1', '.2', '.3', '.4', '.5', '.6', '.7', '.8', '.9'];

/** Milliseconds with exactly one decimal, without `toFixed` (this runs once per line). */
export function ms1(ms: number): string {
  if (!(ms > 0)) return '0.0';
  const tenths = Math.round(ms * 10);
  // One number converted instead of two: this runs for every line of the comment and metric.
  const f = DOT[tenths % 10];
  return f === undefined ? `${Math.floor(tenths / 10)}.${tenths % 10}` : Math.floor(tenths / 10) + f;
}
