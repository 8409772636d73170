import { tracingChannel } from 'node:diagnostics_channel';
import { closeStep, markFailed, openStep } from '../core/auto.js';
import { als } from '../core/context.js';
import { report } from '../core/errors.js';
import type { Profile } from '../core/profile.js';
import { F_HANDLER, type TimingNode } from '../core/timing.js';

/**
 * Fastify's route handler as a step, `handler GET /users/:id`, with the user's `step()`s inside.
 *
 * Fastify publishes a tracing channel around every route handler (docs/Reference/Hooks.md,
 * "Diagnostics Channel Hooks"), and calls the handler through `start.runStores(message, …)`. A
 * store bound to that channel with `bindStore(als, transform)` is entered with `als.run` for the
 * handler's call: the transform opens the step and returns it, so the handler runs with the step
 * as its current step. The step ends as the reply is sent, which is when the response's outputs
 * are made from the tree; the `error` event (a throw or a rejection, an Error or not) marks it
 * errored.
 *
 * The store is bound only while a developer request that wants it is open, so nobody else's
 * request pays for the channel; and the transform opens a step only for those requests' replies.
 * For anyone else's request that runs meanwhile it returns the store that is current already,
 * which `als.run` enters without any work (it checks for that first, on every Node we support).
 */

const handler = tracingChannel<unknown, TimingNode<Profile>>('fastify.request.handler');

/** What Fastify's `start` message holds (its docs list request, reply and route). */
interface Start {
  request?: { method?: unknown };
  reply?: object;
  route?: { url?: unknown; method?: unknown };
}

type OnError = (err: unknown) => void;

/** The replies of developer requests still open, with their profile's fault handler. */
const wanted = new WeakMap<object, OnError>();
/** How many of them: the store is bound while there is at least one. */
let live = 0;
/** The step opened for a `start` message, for its `error` event (the same object). */
const opened = new WeakMap<object, TimingNode<Profile>>();

/**
 * Time this developer request's route handler. `raw` is the reply's Node response: its 'close'
 * (finished or aborted alike) ends the request's interest.
 */
export function timeFastifyHandler(reply: object, raw: { once(event: 'close', listener: () => void): unknown }, onError: OnError): void {
  wanted.set(reply, onError);
  if (live++ === 0) {
    handler.start.bindStore(als, enter);
    handler.error.subscribe(failed);
  }
  raw.once('close', () => {
    wanted.delete(reply);
    if (--live > 0) return;
    handler.start.unbindStore(als);
    handler.error.unsubscribe(failed);
  });
}

/**
 * The store the handler runs with. It must not throw: Node reports a transform's exception as
 * an uncaught exception.
 */
function enter(message: unknown): TimingNode<Profile> {
  // Undefined outside any profile: returned as it is, like any store (the types want a node).
  const scope = als.getStore() as TimingNode<Profile>;
  const m = message as Start;
  const onError = m.reply === undefined ? undefined : wanted.get(m.reply);
  if (onError === undefined) return scope;
  try {
    const t = openStep(handlerName(m), onError, scope, F_HANDLER);
    if (t === null) return scope;
    opened.set(message as object, t);
    endAtSend(m.reply as Sends, t);
    return t;
  } catch (err) {
    report(onError, err);
    return scope;
  }
}

/** Fastify's `error` event: the handler threw or rejected (before the error is sent). */
function failed(message: unknown): void {
  const t = typeof message === 'object' && message !== null ? opened.get(message) : undefined;
  if (t !== undefined) markFailed(t);
}

/** `handler GET /users/:id`: the route's method and its URL pattern, never the request's path. */
function handlerName(m: Start): string {
  const method = typeof m.route?.method === 'string' ? m.route.method : m.request?.method;
  const url = m.route?.url;
  return `handler ${typeof method === 'string' ? method : ''} ${typeof url === 'string' ? url : ''}`.trim();
}

interface Sends {
  send: (...args: unknown[]) => unknown;
}

/** End `t` at the reply's first send, errored when what is sent is an error (a throw, a rejection). */
function endAtSend(reply: Sends, t: TimingNode<Profile>): void {
  const send = reply.send;
  const sendOnce = function (this: Sends, payload?: unknown): unknown {
    if (reply.send === sendOnce) reply.send = send;
    closeStep(t, payload instanceof Error);
    return send.apply(this, arguments as unknown as unknown[]);
  };
  reply.send = sendOnce;
}
