import { afterEach, describe, expect, test } from 'vitest';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyView from '@fastify/view';
import ejs from 'ejs';
import { miniprof } from '../adapters/fastify.js';
import { step } from '../src/index.js';

/**
 * Issue 59 item 12: on Fastify, `using t = step('render'); return await reply.view(…)` read
 * `(unfinished)`. A Fastify reply is a thenable that settles once the response has been sent, so
 * the step is still open when miniprof writes the response's outputs: it really was unfinished.
 * What to write instead (docs/attribution.md): time the rendering, not the sending, with
 * `reply.viewAsync`, which renders and returns the page for Fastify to send.
 */
const root = fileURLToPath(new URL('./fixtures/views/', import.meta.url));
let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function page(handler: (req: unknown, reply: never) => Promise<unknown>): Promise<string> {
  app = Fastify();
  await app.register(miniprof);
  await app.register(fastifyView, { engine: { ejs }, root });
  app.get('/', handler as never);
  const res = await app.inject({ method: 'GET', url: '/', remoteAddress: '127.0.0.1' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.body).toContain('<h1>Hello</h1>');
  return res.body;
}

/**
 * The `render` step's line of the page's comment (under Fastify's own handler step), its time
 * replaced by T. The template's own step (autoSteps) is `render page.ejs`, below it.
 */
function renderLine(body: string): string | undefined {
  return body
    .split('\n')
    .find((l) => /^>+ render = /.test(l))
    ?.replace(/^>+/, '>')
    .replace(/[\d.]+ms/, 'Tms');
}

describe('Fastify + @fastify/view: a render step', () => {
  test('`using` + `return await reply.view()`: the step spans the sending, so it is unfinished when the comment is written', async () => {
    const body = await page(async (_req: unknown, reply: { view(p: string, d: object): Promise<unknown> }) => {
      using _t = step('render');
      return await reply.view('page.ejs', { title: 'Hello' });
    });
    expect(renderLine(body)).toBe('> render = Tms (unfinished)');
  });

  test('what docs/attribution.md says to write: step around reply.viewAsync(), which only renders', async () => {
    const body = await page(async (_req: unknown, reply: { viewAsync(p: string, d: object): Promise<string> }) => {
      return step('render', () => reply.viewAsync('page.ejs', { title: 'Hello' }));
    });
    expect(renderLine(body)).toBe('> render = Tms');
  });

  test('the same with `using`, awaiting only the rendering', async () => {
    const body = await page(async (_req: unknown, reply: { viewAsync(p: string, d: object): Promise<string> }) => {
      using _t = step('render');
      const html = await reply.viewAsync('page.ejs', { title: 'Hello' });
      return html;
    });
    expect(renderLine(body)).toBe('> render = Tms');
  });
});
