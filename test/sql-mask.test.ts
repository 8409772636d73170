/**
 * Issue 57 item 1: SQL masking is a tokenizer of each dialect. Generated statements put secrets in
 * every kind of literal the dialect has, in comments full of stray quotes, right after quoted
 * names holding quotes and comment starters, and as numbers; no secret may survive, in the
 * dialect or with none, and every quoted name survives as written in its dialect. A real
 * PostgreSQL is the oracle that the generated text means what the generator says
 * (test/mask-real.test.ts).
 */
import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { maskSql, redact } from '../src/analysis/normalize.js';
import type { SqlDialect } from '../src/core/types.js';
import { join, statement } from './helpers/sql-gen.js';

const DIALECTS: SqlDialect[] = ['postgres', 'mysql', 'mssql', 'sqlite'];

describe.each(DIALECTS)('%s', (d) => {
  test(`property: no secret survives, in ${d} or with no dialect; every quoted name is kept as written in ${d}; one line`, () => {
    fc.assert(
      fc.property(statement(d), (ts) => {
        const text = join(ts);
        const known = maskSql(text, d);
        const unknown = redact(text, 'sql');
        for (const out of [known, unknown]) {
          expect(out).not.toContain('ZQX');
          expect(out).not.toMatch(/\d{10}/);
          expect(out).not.toContain('\n');
        }
        for (const [t] of ts) if (t.name !== undefined) expect(known).toContain(t.name);
      }),
      { numRuns: 2000 },
    );
  });
});
