// A small Express page with nested steps, a Promise.all of steps and a `using` block.
// `npm run demo` builds it, serves it on 127.0.0.1, fetches one page as a developer (loopback
// peers are developers by default outside production) and prints what miniprof added.
import express from 'express';
import { step } from '../src/index.js';
import { miniprof } from '../adapters/express.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createApp() {
  const app = express();
  app.use(miniprof());
  app.get('/', async (_req, res) => {
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
    res.type('html').send(html);
  });
  return app;
}

if (process.argv.includes('--demo')) {
  // Express 5 calls back with the listen error too (the 'error' handler below reports it).
  const server = createApp().listen(Number(process.env.PORT ?? 3000), '127.0.0.1', async (err?: Error) => {
    if (err !== undefined) return;
    const { port } = server.address() as { port: number };
    const url = `http://127.0.0.1:${port}/`;
    const res = await fetch(url);
    const body = await res.text();
    console.log(`GET ${url} -> ${res.status}\n`);
    console.log(`Server-Timing: ${res.headers.get('server-timing')}\n`);
    console.log(body.slice(body.indexOf('<!--'), body.lastIndexOf('-->') + 3));
    console.log(`\nThis profile: http://127.0.0.1:${port}/_miniprof/${res.headers.get('x-miniprof-id')} (recent ones: http://127.0.0.1:${port}/_miniprof/)`);
    console.log(`\nServing ${url} until Ctrl-C (open it and view the source, or DevTools > Network > Timing; PORT=<n> npm run demo for another port).`);
  });
  server.on('error', (err: NodeJS.ErrnoException) => {
    console.error(err.code === 'EADDRINUSE' ? `Port ${process.env.PORT ?? 3000} is in use: PORT=3001 npm run demo` : err.message);
    process.exitCode = 1;
  });
}
