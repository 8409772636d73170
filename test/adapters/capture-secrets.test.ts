/**
 * Issue 57: the capture path end to end on every adapter (test/adapters/apps.ts). A request that
 * is not a developer's, sampled and kept, runs real calls whose commands hold other people's
 * secrets (SQL after a comment with an apostrophe, a backtick name, PostgreSQL's 'C:\', values
 * sent apart from the text, Redis keys and AUTH, a webhook URL), and is sent once in origin form
 * with a token in its path and once in absolute form with userinfo. The stored profile JSON (and
 * the captured list) holds none of them, and still shows the names and key namespaces.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import mysql from 'mysql2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openProfiles } from '../../src/core/context.js';
import { CAPTURE_OWNER } from '../../src/results/store.js';
import { memoryStore, timing } from '../../src/index.js';
import { closeServers, raw, serve, waitFor } from '../helpers/http.js';
import { startMysqlServer } from '../helpers/mysql-server.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { ADAPTERS, type Routes } from './apps.js';

const SECRETS = {
  email: 'victim@example.com',
  password: 'hunter2pw',
  param: 'PSECRET-param',
  apiKey: 'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
  session: 's%3Aj1F2xQ.abcDEF9',
  hook: 'a1B2c3D4e5F6g7H8i9J0k1L2',
  token: 'tok_8f3KqLzP2xW9vR4mN7bC',
  query: 'QSECRET',
  userinfo: 'alicepw',
};
const TOKEN_PATH = `/reset/${SECRETS.token}`;

let redis: RedisServer;
let io: Redis;
let mysqlServer: Awaited<ReturnType<typeof startMysqlServer>>;
let db: mysql.Connection;
let hooks: http.Server;
let hooksPort: number;

beforeAll(async () => {
  redis = await startRedis();
  io = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
  await io.connect();
  mysqlServer = await startMysqlServer((conn) => conn.writeOk());
  db = mysql.createConnection({ host: '127.0.0.1', port: mysqlServer.port, user: 'u' });
  hooks = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  hooksPort = (hooks.address() as AddressInfo).port;
});

afterAll(async () => {
  io?.disconnect();
  db?.destroy();
  await mysqlServer?.close();
  await redis?.kill();
  await new Promise((r) => hooks?.close(r));
});

afterEach(async () => {
  await closeServers();
});

/** What the page does: real calls through every instrumentation, and the app's own timings. */
async function calls(): Promise<void> {
  const { email, password, param, apiKey, session, hook } = SECRETS;
  await db.promise().query(`select \`it's\` from users -- don't log\nwhere email = ? and pw = ?`, [email, password]);
  await db.promise().execute('select `id` from `users` where email = ?', [param]).catch(() => undefined);
  await io.get(`apikey:${apiKey}`);
  await io.set(`session:sid=${session}`, password);
  await io.call('AUTH', password).catch(() => undefined);
  await (await fetch(`http://127.0.0.1:${hooksPort}/services/T0A1B2C3D/B0A1B2C3D/${hook}?token=${password}`)).text();
  await timing('sql', `select 'C:\\' as dir, "email" from "users" where "email" = '${email}'`, () => undefined, { dialect: 'postgres' });
  await timing('sql', 'select * from t where a = $1', () => undefined, { dialect: 'postgres', values: [param] });
  await timing('sql', `select * from users /* it's */ where pw = '${password}'`, () => undefined);
}

const routes: Routes = {
  [TOKEN_PATH]: async () => {
    await calls();
    return { headers: { 'content-type': 'text/html' }, body: '<!doctype html><html><body>ok</body></html>' };
  },
  '/err': async () => ({ status: 500, body: 'failed' }),
};

describe.each(ADAPTERS)('$name', (a) => {
  it('issue 57: a captured profile of someone else holds no secret of the commands, the path or the request target', async () => {
    const store = memoryStore();
    const reports: unknown[] = [];
    const options = {
      isDeveloper: () => false,
      // Even with redact: false, a captured profile is masked.
      redact: false,
      capture: { rate: 1, slowerThanMs: 0 },
      results: { store },
      onInternalError: (e: unknown) => reports.push(e),
    };
    const port = await serve(await a.listener(options, routes));
    expect((await raw(port, { path: `${TOKEN_PATH}?q=${SECRETS.query}` })).status).toBe(200);
    // Absolute form (RFC 9112 3.2.2), userinfo and all: each framework routes it its own way.
    await raw(port, { path: `http://alice:${SECRETS.userinfo}@127.0.0.1:${port}/err?q=${SECRETS.query}` });
    await waitFor(() => openProfiles() === 0, 3000, 'the captured profiles closed');
    const list = await store.list(CAPTURE_OWNER, 10);
    expect(list.map((s) => s.path).sort()).toEqual(['/err', '/reset/?']);
    const profiles = await Promise.all(list.map((s) => store.get(CAPTURE_OWNER, s.id)));
    const text = JSON.stringify(profiles) + JSON.stringify(list);
    for (const [where, secret] of Object.entries(SECRETS)) expect(text.includes(secret), `${where} secret in the store`).toBe(false);
    for (const part of ['T0A1B2C3D', 'j1F2xQ', 'alice', '127.0.0.1:' + port]) expect(text).not.toContain(part);
    // What is kept: names as written, key namespaces, the shapes.
    const commands = profiles.flatMap((p) => JSON.stringify(p).match(/"command":"(?:[^"\\]|\\.)*"/g) ?? []);
    expect(commands).toEqual(
      expect.arrayContaining([
        '"command":"select `it\'s` from users where email = ? and pw = ?"',
        '"command":"select `id` from `users` where email = ?"',
        '"command":"GET apikey:?"',
        '"command":"SET session:?"',
        '"command":"AUTH ?"',
        `"command":"GET http://127.0.0.1:${hooksPort}/services/?/?/??token=?"`,
        '"command":"select ? as dir, \\"email\\" from \\"users\\" where \\"email\\" = ?"',
        '"command":"select * from t where a = $1"',
        '"command":"select * from users where pw = ?"',
      ]),
    );
    expect(reports).toEqual([]);
  });
});
