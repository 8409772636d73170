/**
 * CPU time this process's JavaScript thread has had, in microseconds: what tells the app's own
 * work from a machine too busy to run it. A late timer only says the loop did not get round to it;
 * the CPU time across the same stretch says how much of that the process was actually running.
 *
 * `process.threadCpuUsage()` (Node ≥ 22.19 and 23.9) counts this thread only. Node 20 has only
 * `process.cpuUsage()`, which adds the process's other threads (garbage collection helpers, the
 * compiler, libuv's pool): it can read a little high, so a stall there is blamed a little more
 * readily, never less. Both cost under a microsecond; they are read per monitor tick (100 a second,
 * while a developer's request is open) and when a step's synchronous part ran long, never per step.
 */
const thread = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage;

export const cpuUs: () => number =
  typeof thread === 'function'
    ? () => {
        const u = thread.call(process);
        return u.user + u.system;
      }
    : () => {
        const u = process.cpuUsage();
        return u.user + u.system;
      };
