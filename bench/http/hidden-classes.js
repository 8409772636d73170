// `node bench/http/hidden-classes.js [--node PATH]`: whether consecutive responses of one server
// share a hidden class once they have ended, for a plain `http` server, for one that sets each
// response's prototype with `Object.setPrototypeOf` (as Express does for every `req` and `res`),
// and for Express itself. Six keep-alive requests each, on 127.0.0.1; prints `true` per pair
// of consecutive responses that share one.
//
// Why: on Node 20 every Express `res` ends up with a hidden class of its own, so every property
// read of it in Node's, Express's and miniprof's code is a megamorphic stub-cache miss (~110 per
// request for Express alone, ~5 for Fastify: bench/instructions/ic.js). A plain server with
// setPrototypeOf and nothing else does the same on Node 20 (V8 11.3), and on Node 24 (V8 13.6)
// neither does: the platform's share of Express's figures on Node 20 (bench/RESULTS.md Run 36).
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
if (process.env.HIDDEN_CLASSES_CHILD !== '1') {
  const i = argv.indexOf('--node');
  const bin = i === -1 ? process.execPath : argv[i + 1];
  // %HaveSameMap needs the flag, which must be given to node itself.
  const r = spawnSync(bin, ['--allow-natives-syntax', fileURLToPath(import.meta.url)], {
    env: { ...process.env, HIDDEN_CLASSES_CHILD: '1' },
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}

// Through Function so that this file parses without the flag too (the parent above).
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
const REQUESTS = 6;

/** Serve REQUESTS requests with `handler` (which must end `res`), one at a time over one socket. */
async function run(label, listen) {
  const seen = [];
  const server = await listen((res) => seen.push(res));
  const { port } = server.address();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < REQUESTS; i++) {
    await new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, agent, path: '/' }, (m) => m.resume().on('end', resolve)).on('error', reject);
    });
  }
  agent.destroy();
  await new Promise((resolve) => server.close(resolve));
  const shared = seen.slice(1).map((res, i) => sameMap(seen[i], res));
  console.log(`${label.padEnd(34)} ${shared.join(' ')}`);
}

function plain(setProto) {
  const proto = Object.create(http.ServerResponse.prototype);
  return (keep) =>
    new Promise((resolve) => {
      const server = http.createServer((_req, res) => {
        if (setProto) Object.setPrototypeOf(res, proto);
        keep(res);
        res.end('ok');
      });
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
}

async function viaExpress(keep) {
  const { default: express } = await import('express');
  const app = express();
  app.get('/', (_req, res) => {
    keep(res);
    res.send('ok');
  });
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}

console.log(`Node ${process.version} (V8 ${process.versions.v8}): consecutive responses share a hidden class after end?`);
await run('http', plain(false));
await run('http + Object.setPrototypeOf(res)', plain(true));
await run('Express', viaExpress);
