// bench/http/page-cost.js's server: the same pages through two Express apps, miniprof with the
// comment and badge (port a) and with `htmlComment: false, badge: false` (port b). `x-dev: 1` is a
// developer. Reports both ports over IPC.
import express from 'express';
import { PAGES } from './page-cost-pages.js';
import { entry } from './page.js';

const { miniprof } = await import(entry('express'));

function app(options) {
  const a = express();
  a.use(miniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', ...options }));
  for (const [name, page] of Object.entries(PAGES)) a.get(`/${name}`, (_req, res) => res.type('html').send(page));
  a.get('/hi', (_req, res) => res.type('html').send('<!doctype html><p>hi</p>'));
  return new Promise((resolve) => {
    const s = a.listen(0, '127.0.0.1', () => resolve(s.address().port));
  });
}

process.send({ a: await app({}), b: await app({ htmlComment: false, badge: false }) });
// The server's own CPU time (µs), asked before and after a request: on a shared machine the wall
// time counts other processes' turns, the CPU time does not.
process.on('message', () => {
  const c = process.cpuUsage();
  process.send(c.user + c.system);
});
