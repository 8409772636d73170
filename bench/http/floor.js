// The floor of a developer request: the least that any profiler meeting DESIGN.md's contract
// must do for the budget's developer row (10 steps, comment and header), and nothing else. If a
// server doing only this misses one of issue 3's developer-request ratios, no implementation of
// the contract can meet that ratio on this machine, and the gap between this row and miniprof's is
// the most that work on miniprof could still win.
//
// What it does per request, each part cheaper than what the contract asks for:
// - enters one AsyncLocalStorage store per request from the framework's cheapest hook (an Express
//   middleware, a Fastify `onRequest`), as any ALS profiler's adapter must;
// - per step: two clock reads and a node on the request's flat list (no tree, no caps, no names
//   checked), `fn` run under `als.run(node, fn)` so that `Promise.all` branches nest (the contract's
//   callback form), and for a thenable one `then` that reads the second clock;
// - outputs: a comment and a `Server-Timing` value of the same bytes as miniprof's for this page,
//   made once at start-up (nothing rendered per request, so no timing in them is true), the comment
//   appended rather than placed before `</body>`, and `Cache-Control: private, no-store`, all set
//   by the route itself so no response method is wrapped.
//
// FLOOR_STEPS=clock leaves out the per-step `als.run` (steps are then clocks and a node, which
// does not nest under `Promise.all`): below what the contract allows on any Node, and below
// miniprof's own step entering on Node 24, where `als.run` copies the context frame twice
// (Run 37). FLOOR_STEPS=none makes the steps plain calls, and FLOOR_OUTPUTS=0
// leaves out the outputs: together they split the floor into its parts.
import { AsyncLocalStorage } from 'node:async_hooks';

const als = new AsyncLocalStorage();
const stepsMode = process.env.FLOOR_STEPS ?? 'run';
if (!['run', 'clock', 'none'].includes(stepsMode)) throw new Error(`FLOOR_STEPS must be run, clock or none, got ${stepsMode}`);
const withRun = stepsMode === 'run';
export const floorOutputs = process.env.FLOOR_OUTPUTS !== '0';

/** A step at the floor: outside a request's store it is a plain call. */
function timedStep(name, fn) {
  const parent = als.getStore();
  if (parent === undefined) return fn();
  // One shape for the root and every node; each holds the request's flat list.
  const node = { name, start: performance.now(), end: -1, nodes: parent.nodes };
  parent.nodes.push(node);
  const r = withRun ? als.run(node, fn) : fn();
  if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
    return r.then((v) => {
      node.end = performance.now();
      return v;
    });
  }
  node.end = performance.now();
  return r;
}

export const floorStep = stepsMode === 'none' ? (_name, fn) => fn() : timedStep;

// Miniprof's comment and header for this page on Express (bench/http/page.js), byte for byte but
// for the timings, which a real profile would have: what the developer's response carries.
const COMMENT = `<!--
bench at 2026-12-04T15:44:06.331Z
Path: GET /
 GET / = 0.3ms
> load user = 0.0ms
> permissions = 0.0ms
>> role lookup = 0.0ms
> query orders = 0.0ms
> sort = 0.0ms
> cache = 0.0ms
> totals = 0.0ms
>> sum = 0.0ms
> title = 0.0ms
> render = 0.0ms
-->`;
const SERVER_TIMING =
  'load_user;dur=0.0;desc="load user", permissions;dur=0.0, query_orders;dur=0.0;desc="query orders", sort;dur=0.0, cache;dur=0.0, totals;dur=0.0, title;dur=0.0, render;dur=0.0, total;dur=0.3';

/** The route's view (bench/http/page.js): the page with the outputs, for a request in a store. */
export function floorView(html, setHeader) {
  const root = als.getStore();
  if (root === undefined) return html;
  root.end = performance.now();
  setHeader('Server-Timing', SERVER_TIMING);
  setHeader('Cache-Control', 'private, no-store');
  return html + COMMENT;
}

const rootOf = () => ({ name: 'GET /', start: performance.now(), end: -1, nodes: [] });

/** Enter a store per request from the framework's cheapest global hook. */
export function installFloor(framework, app) {
  if (framework === 'express') app.use((_req, _res, next) => als.run(rootOf(), next));
  else app.addHook('onRequest', (_request, _reply, done) => als.run(rootOf(), done));
}
