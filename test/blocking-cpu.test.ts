import { spawn } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { renderText, step, withProfile } from '../src/index.js';
import { sleep } from './helpers/clock.js';
import { work } from './helpers/cpu.js';
import { byName } from './helpers/tree.js';

/**
 * Issue 59 item 3: blocking is blamed only on the app's own work. The event-loop monitor sees a
 * late tick; whether the process was running during it is read from its CPU time. A paused
 * process (SIGSTOP here: the same as a machine too busy to run it, only exact) is reported once
 * in the profile's notes and never against a step.
 */

/** Stop this process for `ms`: a child started first sends SIGCONT when the time is up. */
function pauseSelf(ms: number): void {
  spawn('sh', ['-c', `sleep ${ms / 1000}; kill -CONT ${process.pid}`], { stdio: 'ignore' }).unref();
  process.kill(process.pid, 'SIGSTOP');
}


describe('startup work (first in this file: the first profile the monitor measures in this process)', () => {
  test("the first measured request's held loop is labelled as possible startup work; later ones are not", async () => {
    const run = () =>
      withProfile('GET /', async () => {
        await step('render', async () => {
          await sleep(5);
          work(40);
        });
        await sleep(15);
      });
    const first = (await run()).profile;
    expect(first.toJSON().startup).toBe(true);
    expect(renderText(first)).toContain('! first request since the process started: blocking here may be one-time startup work (module loading, compilation)\n');
    const second = (await run()).profile;
    expect(second.toJSON().eventLoopDelayMs).toBeGreaterThan(20);
    expect(second.toJSON().startup).toBeUndefined();
    expect(renderText(second)).not.toContain('startup');
  });
});

describe('a process that did not run is not a step that blocked', () => {
  test('paused for 150 ms while a step only awaited: no step is flagged, the notes say the process did not run', async () => {
    const { profile } = await withProfile('GET /', async () => {
      setTimeout(() => pauseSelf(150), 20);
      await step('query', () => sleep(200));
    });
    const json = profile.toJSON();
    expect(byName(json.root, 'query')).not.toHaveProperty('blocking');
    expect(json.eventLoopDelayMs).toBeUndefined();
    expect(json.notRunMs).toBeGreaterThanOrEqual(120);
    expect(json.notRunMs).toBeLessThanOrEqual(json.durationMs);
    expect(renderText(profile)).toContain(
      `! the process did not run for ${json.notRunMs!.toFixed(1)}ms while this profile was open (a busy machine or a pause): not counted against any step\n`,
    );
  });

  test('paused during a synchronous step: by the clock it ran 150 ms, by the CPU it did not block', async () => {
    const { profile } = await withProfile('GET /', async () => {
      await sleep(15);
      step('parse', () => pauseSelf(150));
      await sleep(15);
    });
    const json = profile.toJSON();
    const parse = byName(json.root, 'parse');
    expect(parse.durationMs).toBeGreaterThanOrEqual(120);
    expect(parse).not.toHaveProperty('blocking');
    expect(json.notRunMs).toBeGreaterThanOrEqual(100);
  });

  test('the same for the synchronous start of an async step', async () => {
    const { profile } = await withProfile('GET /', async () => {
      await sleep(15);
      await step('load', async () => {
        pauseSelf(150);
        await sleep(5);
      });
    });
    const load = byName(profile.toJSON().root, 'load');
    expect(load.syncMs).toBeGreaterThanOrEqual(120);
    expect(load).not.toHaveProperty('blocking');
  });

  test('50 ms of real work after an await, with a 150 ms pause in the middle: held about 50 ms, not 200', async () => {
    const { profile } = await withProfile('GET /', async () => {
      await step('crunch', async () => {
        await sleep(5);
        work(25);
        pauseSelf(150);
        work(25);
      });
      await sleep(15);
    });
    const json = profile.toJSON();
    const crunch = byName(json.root, 'crunch');
    expect(crunch.durationMs).toBeGreaterThanOrEqual(170);
    expect(crunch.blocking).toBe(true);
    // At least the work less the monitor's resolution (10 ms); at most the work and the few ms of
    // CPU that starting the SIGCONT child and the timers took.
    expect(crunch.heldMs).toBeGreaterThanOrEqual(39);
    expect(crunch.heldMs).toBeLessThanOrEqual(70);
    expect(json.eventLoopDelayMs).toBeLessThanOrEqual(70);
    expect(json.notRunMs).toBeGreaterThanOrEqual(120);
  });
});
