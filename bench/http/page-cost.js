// Issue 58: what a developer's big page costs. `node bench/http/page-cost.js [--rounds N]` (after
// `npm run build`; run it with another node binary for another version). One Express 5 server
// process (bench/http/page-cost-server.js) serves the same pages through two apps: miniprof with
// the comment and badge (A) and with `htmlComment: false, badge: false` (B). Prints:
// - a developer's latency on each page, A against B, alternating request by request (medians);
// - a non-developer's p99 (autocannon, 20 connections) while a developer loads the 1 MB messy page
//   (again 250 ms after each load: a developer reloading four times a second), against slices
//   without the developer and with one whose app has `htmlComment: false, badge: false` (the
//   app's own cost of the page), alternating 4 s slices;
// - the scan's own speed (dist/src/http/scan.js, in this process) in MB/s.
import { fork } from 'node:child_process';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { PAGES } from './page-cost-pages.js';

const here = dirname(fileURLToPath(import.meta.url));
const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1] || 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function get(port, path, dev) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path, agent, headers: dev ? { 'x-dev': '1' } : {} }, (res) => {
      let n = 0;
      let comment = false;
      res.on('data', (c) => {
        n += c.length;
        if (!comment && c.includes('<!--\n')) comment = true;
      });
      res.on('end', () => resolve({ ms: performance.now() - t0, bytes: n, comment }));
    });
    req.on('error', reject);
  });
}

const server = fork(join(here, 'page-cost-server.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const { a, b } = await new Promise((r) => server.once('message', r));
const serverCpu = () => new Promise((r) => { server.once('message', r); server.send('cpu'); });
/** One request, with the server's CPU time spent on it (µs → ms). */
async function measured(port, path) {
  const c0 = await serverCpu();
  const r = await get(port, path, true);
  r.cpu = ((await serverCpu()) - c0) / 1000;
  return r;
}
console.log(`node ${process.version}, ${rounds} rounds, shared machine (load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')})`);

// 1. A developer's request, with the comment against without, one after the other.
console.log('\n| page | size | developer, comment + badge: wall / server CPU | developer, htmlComment: false, badge: false: wall / server CPU | difference: wall / server CPU | comment placed |');
console.log('|---|---:|---:|---:|---:|---|');
for (const [name, page] of Object.entries(PAGES)) {
  const n = name === 'huge' ? 3 * rounds : 15 * rounds;
  const on = [];
  const off = [];
  let placed = false;
  for (let i = 0; i < n + 2; i++) {
    const x = await measured(a, `/${name}`);
    const y = await measured(b, `/${name}`);
    if (i < 2) continue; // warm-up
    on.push(x);
    off.push(y);
    placed = x.comment;
  }
  const mb = (Buffer.byteLength(page) / 1e6).toFixed(2);
  const w = (xs) => median(xs.map((x) => x.ms));
  const c = (xs) => median(xs.map((x) => x.cpu));
  const both = (xs) => `${w(xs).toFixed(1)} / ${c(xs).toFixed(1)} ms`;
  console.log(`| ${name} | ${mb} MB | ${both(on)} | ${both(off)} | ${(w(on) - w(off)).toFixed(1)} / ${(c(on) - c(off)).toFixed(1)} ms | ${placed ? 'yes' : 'no (above maxBytes)'} |`);
}

// 2. Everyone else while a developer loads the messy megabyte.
/** `developer`: none, or the port whose app a developer loads the messy page from, back to back. */
async function slice(developer) {
  let stop = false;
  const dev = (async () => {
    while (developer !== null && !stop) {
      await get(developer, '/messy', true);
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const r = await autocannon({ url: `http://127.0.0.1:${a}/hi`, connections: 20, duration: 4 });
  stop = true;
  await dev;
  return { p99: r.latency.p99, p50: r.latency.p50, rps: r.requests.average };
}
const quiet = [];
const busy = [];
const control = [];
for (let i = 0; i < rounds; i++) {
  quiet.push(await slice(null));
  busy.push(await slice(a));
  control.push(await slice(b));
}
const m = (xs, k) => median(xs.map((x) => x[k]));
console.log('\n| non-developer GET /hi (20 connections) | p50 | p99 | req/s |');
console.log('|---|---:|---:|---:|');
console.log(`| alone | ${m(quiet, 'p50')} ms | ${m(quiet, 'p99')} ms | ${m(quiet, 'rps').toFixed(0)} |`);
console.log(`| while a developer reloads the 1 MB messy page every 250 ms, \`htmlComment: false, badge: false\` (the app's own cost) | ${m(control, 'p50')} ms | ${m(control, 'p99')} ms | ${m(control, 'rps').toFixed(0)} |`);
console.log(`| while a developer reloads the 1 MB messy page every 250 ms, comment and badge | ${m(busy, 'p50')} ms | ${m(busy, 'p99')} ms | ${m(busy, 'rps').toFixed(0)} |`);
console.log(`p99: +${(m(busy, 'p99') - m(quiet, 'p99')).toFixed(1)} ms over alone; +${(m(busy, 'p99') - m(control, 'p99')).toFixed(1)} ms over the same developer without the comment`);
server.kill();
agent.destroy();

// 3. The scan alone.
const { scan } = await import(pathToFileURL(join(here, '../../dist/src/http/scan.js')).href);
// Wall time on a shared machine counts the time other processes hold the CPU; CPU time does not.
console.log('\n| page | scan, wall median | MB/s (wall) | scan, CPU median | MB/s (CPU) |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, page] of Object.entries(PAGES)) {
  const wall = [];
  const cpu = [];
  for (let i = 0; i < (name === 'huge' ? 5 : 30); i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    scan(page);
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const mbs = (ms) => (page.length / 1e6 / (ms / 1000)).toFixed(0);
  console.log(`| ${name} | ${median(wall).toFixed(2)} ms | ${mbs(median(wall))} | ${median(cpu).toFixed(2)} ms | ${mbs(median(cpu))} |`);
}
