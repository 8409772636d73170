// `node bench/http/hidden-classes.js [--node PATH]`: whether consecutive responses of one server
// share a hidden class once they have ended, for a plain `http` server, for one that sets each
// `req`'s and `res`'s prototype with `Object.setPrototypeOf` (as Express does), and for Express
// itself; and the bytes each request leaves in V8's old space (bench/gc/old-space.js, as
// bench/gc/promotion.js counts them, over 10,000 requests).
// Prints `true` per pair of consecutive responses that share a hidden class.
//
// Why: on Node 20 every Express `res` ends up with a hidden class of its own, so every property
// read of it in Node's, Express's and miniprof's code is a megamorphic stub-cache miss (~110 per
// request for Express alone, ~5 for Fastify: bench/instructions/ic.js). A plain server with
// setPrototypeOf and nothing else does the same on Node 20 (V8 11.3) and 22, and on Node 24 (V8
// 13.6) neither does. Those classes are old-space garbage, ~3.3 KB per request for setPrototypeOf
// alone and ~11 KB for Express on Node 20, under 0.1 KB on Node 24: the old-space growth that
// bench/RESULTS.md Run 8 found for Express alone, and the platform's share of Express's figures on
// Node 20 (Run 36).
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { OLD_SPACE_FLAGS, keepAliveClient, oldSpacePerRequest } from '../gc/old-space.js';

const argv = process.argv.slice(2);
if (process.env.HIDDEN_CLASSES_CHILD !== '1') {
  const i = argv.indexOf('--node');
  const bin = i === -1 ? process.execPath : argv[i + 1];
  // %HaveSameMap needs the flag, which must be given to node itself.
  const r = spawnSync(bin, ['--allow-natives-syntax', ...OLD_SPACE_FLAGS, fileURLToPath(import.meta.url)], {
    env: { ...process.env, HIDDEN_CLASSES_CHILD: '1' },
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}

// Through Function so that this file parses without the flag too (the parent above).
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
const REQUESTS = 6;
const COUNTED = 10000;

/** REQUESTS requests, whose responses are compared; then the old-space count. */
async function run(label, listen) {
  const seen = [];
  const server = await listen((res) => {
    if (seen.length < REQUESTS) seen.push(res);
  });
  const client = keepAliveClient(server.address().port);
  for (let i = 0; i < REQUESTS; i++) await client.get();
  const shared = seen.slice(1).map((res, i) => sameMap(seen[i], res));
  const { bytesPerRequest, markCompacts } = await oldSpacePerRequest(client.get, { warm: 2000, count: COUNTED });
  client.close();
  await new Promise((resolve) => server.close(resolve));
  const bytes = markCompacts > 0 ? `INVALID (${markCompacts} mark-compacts in the window)` : bytesPerRequest;
  console.log(`${label.padEnd(34)} ${shared.join(' ').padEnd(30)} ${bytes}`);
}

function plain(setProto) {
  const proto = Object.create(http.ServerResponse.prototype);
  const reqProto = Object.create(http.IncomingMessage.prototype);
  return (keep) =>
    new Promise((resolve) => {
      const server = http.createServer((req, res) => {
        if (setProto) {
          Object.setPrototypeOf(req, reqProto);
          Object.setPrototypeOf(res, proto);
        }
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

console.log(`Node ${process.version} (V8 ${process.versions.v8})`);
console.log(`${'server'.padEnd(34)} ${'same hidden class after end'.padEnd(30)} old-space bytes per request`);
await run('http', plain(false));
await run('http + Object.setPrototypeOf', plain(true));
await run('Express', viaExpress);
