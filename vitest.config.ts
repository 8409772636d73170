import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real sockets and one process-wide AsyncLocalStorage per file: forks keep files apart.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
