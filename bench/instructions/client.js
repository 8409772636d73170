// `node bench/instructions/client.js <express|fastify> [config...]` (after `npm run build`; needs
// valgrind): how many of bench/instructions' counts are the harness's client, not the server.
// The harness counts client and server in one process. The client's share is not the same in
// every row: a developer response has more headers and a comment to parse. For each bench server
// configuration (bench/http/server.js; default none and dev) this takes one response as served,
// replays it to the harness's client from a raw TCP server (replay.js) and counts instructions per
// request as run.js does (requests 2000..5000). What a row adds over `none` here is the client's
// part of what it adds in run.js.
import { fork } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachegrindScript, instructionCount } from './cachegrind.js';

const here = dirname(fileURLToPath(import.meta.url));
const [framework, ...rest] = process.argv.slice(2);
const configs = rest.length > 0 ? rest : ['none', 'dev'];
if (!['express', 'fastify'].includes(framework)) {
  console.error('usage: node bench/instructions/client.js <express|fastify> [config...]');
  process.exit(2);
}

/** The raw bytes of the second response on a keep-alive connection (the first warms the server). */
async function served(config) {
  const cp = fork(join(here, '../http/server.js'), [framework, config], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const { port } = await new Promise((resolve) => cp.once('message', resolve));
  try {
    return await new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let buf = Buffer.alloc(0);
      let asked = 0;
      const ask = () => {
        asked++;
        buf = Buffer.alloc(0);
        socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
      };
      socket.on('connect', ask);
      socket.on('error', reject);
      socket.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        const head = buf.indexOf('\r\n\r\n');
        if (head === -1) return;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buf.subarray(0, head).toString('latin1'))?.[1]);
        if (!(buf.length >= head + 4 + length)) return;
        if (asked === 1) return ask();
        socket.destroy();
        resolve(buf);
      });
    });
  } finally {
    cp.kill();
  }
}

async function count(file, requests) {
  return instructionCount(await cachegrindScript({ script: join(here, 'replay.js'), args: [file, String(requests)] }), `the client replaying ${file}`);
}

const dir = mkdtempSync(join(tmpdir(), 'miniprof-client-'));
try {
  const rows = [];
  for (const config of configs) {
    const bytes = await served(config);
    const file = join(dir, `${config}.http`);
    writeFileSync(file, bytes);
    const [a, b] = await Promise.all([count(file, 2000), count(file, 5000)]);
    rows.push({ config, bytes: bytes.length, perRequest: Math.round((b - a) / 3000) });
  }
  console.log(`${framework}, Node ${process.version}: the harness's client (and a raw replay server) per response\n`);
  console.log('| configuration | response bytes | instructions/request | over the first row |\n| --- | ---: | ---: | ---: |');
  for (const r of rows) console.log(`| ${r.config} | ${r.bytes} | ${r.perRequest.toLocaleString('en-US')} | ${r === rows[0] ? '' : `+${(r.perRequest - rows[0].perRequest).toLocaleString('en-US')}`} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
