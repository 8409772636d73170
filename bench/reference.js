// The reference profiler that issue 3's budget was set against, as performance.md §3 describes
// it, written here so it can be measured side by side with miniprof on the same machine, in the
// same run: a clock read, a `{ name, start, end, children }` node pushed onto its parent's
// lazily made `children`, `fn` run under `als.run(node, fn)`, a clock read in `finally`, and for a
// thenable a `.then` that reads the clock once more. It is the floor an ALS profiler stands on.
//
// It is not a profiler anyone should ship: no step cap, no depth cap, names not checked, no
// results store, no abort or deadline handling, and the HTTP parts below trust the app's body.
// The point is to show which of the budget's figures are set by the platform (the clock, the
// ALS, the framework's hooks) rather than by miniprof.
import { AsyncLocalStorage } from 'node:async_hooks';

const now = () => performance.now();

/** A step function on `als`: outside a store it calls `fn` and nothing else. */
export function referenceStep(als) {
  return function step(name, fn) {
    const parent = als.getStore();
    if (parent === undefined) return fn();
    const node = { name, start: now(), end: 0, children: null };
    (parent.children ??= []).push(node);
    let r;
    try {
      r = als.run(node, fn);
    } finally {
      node.end = now();
    }
    if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
      return r.then(
        (v) => {
          node.end = now();
          return v;
        },
        (e) => {
          node.end = now();
          throw e;
        },
      );
    }
    return r;
  };
}

// The outputs as the reference renders them: string building, toFixed, a regex per name.
function walk(node, depth, rows) {
  for (const c of node.children ?? []) {
    rows.push({ name: c.name, depth, ms: c.end - c.start });
    walk(c, depth + 1, rows);
  }
  return rows;
}

function renderComment(root) {
  let s = `\n<!-- ${root.name} ${(root.end - root.start).toFixed(2)} ms\n`;
  for (const r of walk(root, 1, [])) s += `${'  '.repeat(r.depth)}${r.name.replace(/--/g, '- -')} ${r.ms.toFixed(2)} ms\n`;
  return `${s}-->`;
}

function renderServerTiming(root) {
  const parts = [`total;dur=${(root.end - root.start).toFixed(2)}`];
  let i = 0;
  for (const r of walk(root, 1, [])) parts.push(`s${i++};desc="${r.name.replace(/["\\\r\n]/g, '')}";dur=${r.ms.toFixed(2)}`);
  return parts.join(', ');
}

const rootOf = (req) => ({ name: `${req.method} ${req.url}`, start: now(), end: 0, children: null });

/**
 * Express: every request profiled. `res.send` is wrapped so an HTML string gets the header and
 * the comment before Express sets Content-Length; the rest of the chain runs in the root's store.
 */
function referenceExpress(als, outputs = true) {
  return (req, res, next) => {
    const root = rootOf(req);
    if (!outputs) return als.run(root, next);
    const send = res.send;
    res.send = function (body) {
      if (typeof body === 'string' && !this.headersSent) {
        root.end = now();
        this.setHeader('Server-Timing', renderServerTiming(root));
        body += renderComment(root);
      }
      return send.call(this, body);
    };
    als.run(root, next);
  };
}

/** Fastify: the two global hooks the budget mentions, `onRequest` (enter) and `onSend` (render). */
function referenceFastify(als, outputs = true) {
  const plugin = async (app) => {
    app.decorateRequest('refRoot', null);
    app.addHook('onRequest', (request, _reply, done) => {
      request.refRoot = rootOf(request.raw);
      als.run(request.refRoot, done);
    });
    if (!outputs) return;
    app.addHook('onSend', (request, reply, payload, done) => {
      const root = request.refRoot;
      if (typeof payload !== 'string' || root === null) return done(null, payload);
      root.end = now();
      reply.header('Server-Timing', renderServerTiming(root));
      done(null, payload + renderComment(root));
    });
  };
  // Hooks apply app-wide, as a fastify-plugin would make them.
  plugin[Symbol.for('skip-override')] = true;
  return plugin;
}

/** One ALS for the reference, as a real profiler would have its own. */
export const referenceAls = new AsyncLocalStorage();

/**
 * Install the reference on a bench app (bench/http/page.js's servePage), and its step for the
 * page. Without `outputs` it profiles every request and renders nothing (to split its cost into
 * layers as bench/http/layers.sh splits miniprof's).
 */
export async function installReference(framework, app, outputs = true) {
  if (framework === 'express') app.use(referenceExpress(referenceAls, outputs));
  else await app.register(referenceFastify(referenceAls, outputs));
}

export const referencePageStep = referenceStep(referenceAls);
