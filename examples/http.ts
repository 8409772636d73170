// The same page on plain node:http, through `wrap` (connect and polka take `miniprof()` with
// `app.use` instead). `node dist/examples/http.js` (after `npm run build`) serves it on 127.0.0.1,
// fetches it once as a developer and prints what miniprof added; `--once` stops after that.
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { step } from '../src/index.js';
import { wrap } from '../adapters/http.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function page(): Promise<string> {
  const user = await step('load user', async () => {
    await step('query users', () => sleep(12));
    return { name: 'Ada' };
  });
  const [posts, friends] = await Promise.all([
    step('load posts', () => sleep(20).then(() => 3)),
    step('load friends', () => sleep(8).then(() => 5)),
  ]);
  using _render = step('render');
  return `<!doctype html><html><body><h1>Hello ${user.name}</h1><p>${posts} posts, ${friends} friends</p></body></html>`;
}

export function createServer(): http.Server {
  return http.createServer(
    wrap((_req, res) => {
      page().then((html) => {
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end(html);
      });
    }),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const server = createServer().listen(Number(process.env.PORT ?? 3004), '127.0.0.1', async () => {
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    const res = await fetch(url);
    const body = await res.text();
    console.log(`GET ${url} -> ${res.status}\n\nServer-Timing: ${res.headers.get('server-timing')}\n`);
    console.log(body.slice(body.indexOf('<!--'), body.lastIndexOf('-->') + 3));
    console.log(`\nThis profile: ${url}_miniprof/${res.headers.get('x-miniprof-id')} (recent ones: ${url}_miniprof/)`);
    if (process.argv.includes('--once')) server.close();
    else console.log(`\nServing ${url} (view the source, or DevTools > Network > Timing). Ctrl-C to stop.`);
  });
}
