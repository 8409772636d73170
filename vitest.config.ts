import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that start a Debian service (test/helpers/services.ts: redis-server, PostgreSQL,
 * nginx, Chromium). `npm test` installs the services first (scripts/services.mjs) and runs them;
 * `npm run test:quick` leaves them out. A new file that starts a service goes here: the
 * `test:quick` project would otherwise fail on a machine without it (test/services.test.ts checks
 * that every file importing a service helper is listed).
 */
export const SERVICE_TESTS = [
  'test/adapters/capture-secrets.test.ts',
  'test/badge-browser.test.ts',
  'test/bluebird-context.test.ts',
  'test/browser.test.ts',
  'test/capture.test.ts',
  'test/cpu-browser.test.ts',
  'test/cpu-redis.test.ts',
  'test/data-layers-mysql.test.ts',
  'test/data-layers-pg.test.ts',
  'test/field/express-knex.test.ts',
  'test/field/fastify-drizzle.test.ts',
  'test/field/koa-sequelize.test.ts',
  'test/insert.test.ts',
  'test/instrument-pg-real.test.ts',
  'test/instrument.test.ts',
  'test/load-verdicts.test.ts',
  'test/mask-mariadb.test.ts',
  'test/mask-real.test.ts',
  'test/nginx.test.ts',
  'test/optin.test.ts',
  'test/otel-pairs-db.test.ts',
  'test/otel-pairs.test.ts',
  'test/otel-pg-plumbing.test.ts',
  'test/otel-real.test.ts',
  'test/otel-spans-only.test.ts',
  'test/otel3.test.ts',
  'test/proxy.test.ts',
  'test/redis-store.test.ts',
  'test/results-hostile.test.ts',
  'test/step-knex.test.ts',
  'test/store-breaker.test.ts',
];

/**
 * Test files that load the built dist/, which `npm test` builds first and `test:quick` does not
 * (test/otel3.test.ts also needs test/otel3's own install, which `npm test`'s pretest makes).
 */
export const BUILD_TESTS = ['test/cpu-field.test.ts', 'test/dist.test.ts', 'test/field/express-knex.test.ts', 'test/heap.test.ts', 'test/otel3.test.ts', 'test/pack.test.ts', 'test/soak.test.ts'];

export default defineConfig({
  test: {
    // Real sockets and one process-wide AsyncLocalStorage per file: forks keep files apart.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // `vitest run` runs both projects (the whole suite); `vitest run --project quick` only the
    // files that need nothing but Node and the sources. (`include` is set per project only: a
    // project's arrays are appended to the root's.)
    projects: [
      { extends: true, test: { name: 'quick', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SERVICE_TESTS, ...BUILD_TESTS] } },
      { extends: true, test: { name: 'services+build', include: [...SERVICE_TESTS, ...BUILD_TESTS] } },
    ],
  },
});
