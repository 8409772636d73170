// The same page on Fastify. `npm run demo:fastify` serves it and fetches it once as a developer.
import Fastify from 'fastify';
import { step } from '../src/index.js';
import { miniprof } from '../adapters/fastify.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function createApp() {
  const app = Fastify();
  await app.register(miniprof);
  app.get('/', async (_req, reply) => {
    const user = await step('load user', async () => {
      await step('query users', () => sleep(12));
      return { name: 'Ada' };
    });
    const [posts, friends] = await Promise.all([
      step('load posts', () => sleep(20).then(() => 3)),
      step('load friends', () => sleep(8).then(() => 5)),
    ]);
    let html: string;
    {
      using _render = step('render');
      html = `<!doctype html><html><body><h1>Hello ${user.name}</h1><p>${posts} posts, ${friends} friends</p></body></html>`;
    }
    return reply.type('text/html; charset=utf-8').send(html);
  });
  return app;
}

if (process.argv.includes('--demo')) {
  const app = await createApp();
  const url = await app.listen({ port: Number(process.env.PORT ?? 3001), host: '127.0.0.1' });
  const res = await fetch(`${url}/`);
  const body = await res.text();
  console.log(`GET ${url}/ -> ${res.status}\n`);
  console.log(`Server-Timing: ${res.headers.get('server-timing')}\n`);
  console.log(body.slice(body.indexOf('<!--'), body.lastIndexOf('-->') + 3));
  console.log(`\nThis profile: ${url}/_miniprof/${res.headers.get('x-miniprof-id')} (recent ones: ${url}/_miniprof/)`);
  console.log(`\nServing ${url}/ (view the source, or DevTools > Network > Timing). Ctrl-C to stop.`);
}
