// Masking cost per command (src/analysis/normalize.ts redact), side by side with another build of
// it, in one process: `node bench/mask.js` bundles this tree's and a revision's normalize.ts with
// esbuild (default revision 8c17845, the single-pattern redactor issue 57 replaced) and times each
// command kind with mitata. Masking runs once per distinct command at a profile's seal (developer
// and captured requests only): this is what such a request pays per custom timing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { bench, do_not_optimize, group, run, summary } from 'mitata';

const rev = process.argv[2] ?? '8c17845';
const dir = mkdtempSync(join(tmpdir(), 'miniprof-mask-'));
async function bundle(name, entry, files) {
  const out = join(dir, `${name}.mjs`);
  await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', outfile: out, logLevel: 'error', ...files });
  return import(out);
}
const now = await bundle('this', 'src/analysis/normalize.ts');
const old = join(dir, 'old');
execFileSync('sh', ['-c', `mkdir -p ${old}/src && git archive ${rev} src | tar -x -C ${old}`]);
const then = await bundle('then', join(old, 'src/analysis/normalize.ts'));

const COMMANDS = {
  'pg, quoted names (knex)': ['sql', 'select "users"."id", "users"."email", "users"."created_at" from "users" inner join "orgs" on "orgs"."id" = "users"."org_id" where "users"."email" = $1 and "orgs"."plan" in ($2, $3) limit $4', 'postgres'],
  'mysql, formatted values': ['sql', "SELECT `id`, `name` FROM `users` WHERE `email` = 'victim@example.com' AND `status` IN ('active', 'trial') AND `created_at` > '2026-12-01 00:00:00' ORDER BY `id` DESC LIMIT 20", 'mysql'],
  'sql, unknown dialect': ['sql', "select * from orders where customer_id = 4211 and note <> 'it''s late' -- check\n and total > 99.5", undefined],
  'redis key': ['redis', 'GET session:sid=s%3Aj1F2xQ.abcDEF9', undefined],
  'http URL': ['http', 'POST https://hooks.slack.com/services/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?token=abc&page=2', undefined],
};

for (const [name, [category, command, dialect]] of Object.entries(COMMANDS)) {
  group(name, () => {
    summary(() => {
      bench('this build', () => do_not_optimize(now.redact(command, category, dialect)));
      bench(`revision ${rev}`, () => do_not_optimize(then.redact(command)));
    });
  });
}
await run({ format: 'markdown', colors: false });
writeFileSync(join(dir, 'done'), '');
