/**
 * Spin until this process has had `ms` more CPU time: the same amount of work however busy the
 * machine is (a loop that spins for `ms` of wall time does less work the busier the machine, and
 * a test of blocking that uses one measures the machine, not the code).
 */
export function work(ms: number): void {
  const until = cpuMs() + ms;
  while (cpuMs() < until);
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
