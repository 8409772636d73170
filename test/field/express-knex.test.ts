/**
 * The field, item 4 of issue 60: an ordinary CommonJS app (test/field/express-knex: Express 5,
 * knex 3, Bookshelf 1, pg 8; and TypeORM 1.1 in typeorm.test.js) with its own suite run by **Jest 29 with its default configuration**
 * and supertest, against a throwaway PostgreSQL. Jest's default configuration loads CommonJS:
 * miniprof's `require` export (dist/bundle/cjs) is what it gets, with no Babel setup. The built
 * miniprof is copied into the app's node_modules, as npm would install it; the app's packages
 * are installed by `npm test`'s pretest.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const APP = join(ROOT, 'test', 'field', 'express-knex');
const COPY = join(APP, 'node_modules', 'miniprof');
let postgres: PostgresServer;

beforeAll(async () => {
  if (!existsSync(join(APP, 'node_modules', 'jest'))) {
    throw new Error('test/field/express-knex/node_modules is missing: run `npm test`, its pretest installs it (or `npm ci --prefix test/field/express-knex`)');
  }
  if (!existsSync(join(ROOT, 'dist', 'bundle', 'cjs', 'express.js'))) throw new Error('dist/ is not built: run `npm run build` first (`npm test` does)');
  rmSync(COPY, { recursive: true, force: true });
  mkdirSync(COPY);
  cpSync(join(ROOT, 'package.json'), join(COPY, 'package.json'));
  cpSync(join(ROOT, 'dist', 'bundle'), join(COPY, 'dist', 'bundle'), { recursive: true });
  postgres = await startPostgres();
}, 60_000);

afterAll(async () => {
  await postgres?.stop();
});

test('Jest (default configuration) + supertest run the app\'s suite with miniprof mounted: a developer\'s request is profiled with its SQL under the right steps and the N+1 named; everyone else gets the app\'s bytes', async () => {
  const child = spawn(process.execPath, [join(APP, 'node_modules', 'jest', 'bin', 'jest.js'), '--ci', '--json', '--testLocationInResults'], {
    cwd: APP,
    env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: `postgres://postgres@127.0.0.1:${postgres.port}/postgres`, NODE_OPTIONS: '' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  expect(code, stderr).toBe(0);
  const report = JSON.parse(stdout) as { testResults: { name: string; assertionResults: { title: string; status: string }[] }[] };
  const results = Object.fromEntries(report.testResults.map((r) => [r.name.slice(APP.length + 1), r.assertionResults.map((a) => [a.title, a.status])]));
  expect(results).toEqual({
    'app.test.js': [
      ["a developer request is profiled: the queries sit under the steps that ran them, and the authors' lookups are named as an N+1", 'passed'],
      ["everyone else gets the app's own bytes and headers", 'passed'],
    ],
    'typeorm.test.js': [
      ['before initialize(): a TypeError that says to call it after initialize()', 'passed'],
      ["after initialize(): a repository's queries under the step that ran them", 'passed'],
    ],
  });
}, 120_000);
