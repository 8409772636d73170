/**
 * scripts/services.mjs, the step before `npm test` runs anything: on a fresh machine it installs
 * the Debian services the suite starts, else it stops the run with one line per missing service.
 * Its logic runs here against a fake filesystem root and a fake apt-get (nothing is installed or
 * removed on this machine). Also: every test file that starts a service is on vitest.config.ts's
 * list, so `npm run test:quick` never meets one.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { ensureServices, installCommand } from '../scripts/services.mjs';
import { BUILD_TESTS, SERVICE_TESTS } from '../vitest.config.js';

const ROOT = resolve(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'scripts', 'services.mjs');

/** What each Debian package puts where the script looks (PostgreSQL's major version varies). */
const FILES: Record<string, string[]> = {
  'redis-server': ['usr/bin/redis-server'],
  postgresql: ['usr/lib/postgresql/17/bin/initdb', 'usr/lib/postgresql/17/bin/postgres'],
  nginx: ['usr/sbin/nginx'],
  chromium: ['usr/bin/chromium'],
  'mariadb-server': ['usr/sbin/mariadbd'],
};

let dir = '';
let root = '';
let log = '';

function install(pkg: string): void {
  for (const f of FILES[pkg]!) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), '#!/bin/sh\n', { mode: 0o755 });
  }
}

/** An apt-get that logs its environment's DEBIAN_FRONTEND and arguments, then does `body`. */
function fakeAptGet(body: string): string {
  const file = join(dir, 'apt-get');
  const make = Object.entries(FILES)
    .map(([pkg, files]) => `    ${pkg}) ${files.map((f) => `mkdir -p '${dirname(join(root, f))}' && printf '#!/bin/sh\\n' > '${join(root, f)}' && chmod 755 '${join(root, f)}'`).join(' && ')} ;;`)
    .join('\n');
  writeFileSync(
    file,
    `#!/bin/sh
echo "DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*" >> '${log}'
install_all() {
  for p in "$@"; do
    case "$p" in
${make}
    esac
  done
}
${body}
`,
    { mode: 0o755 },
  );
  return file;
}

function aptCalls(): string[] {
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
}

function run(options: Parameters<typeof ensureServices>[0]): { code: number; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const l = vi.spyOn(console, 'log').mockImplementation((s: string) => void out.push(s));
  const e = vi.spyOn(console, 'error').mockImplementation((s: string) => void err.push(...s.split('\n')));
  try {
    return { code: ensureServices({ root, dryRun: false, ...options }), out, err };
  } finally {
    l.mockRestore();
    e.mockRestore();
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'miniprof-services-'));
  root = join(dir, 'root');
  log = join(dir, 'apt.log');
  mkdirSync(root);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('scripts/services.mjs', () => {
  test('everything there: one line with each path, apt-get never runs', () => {
    for (const pkg of Object.keys(FILES)) install(pkg);
    const r = run({ isRoot: true, aptGet: fakeAptGet('exit 0') });
    expect(r).toEqual({
      code: 0,
      out: [`services: redis-server ${root}/usr/bin/redis-server, PostgreSQL ${root}/usr/lib/postgresql/17/bin, nginx ${root}/usr/sbin/nginx, Chromium ${root}/usr/bin/chromium, MariaDB ${root}/usr/sbin/mariadbd`],
      err: [],
    });
    expect(aptCalls()).toEqual([]);
  });

  test('root: the missing ones are installed with one apt-get update and one non-interactive, quiet install', () => {
    install('redis-server');
    install('postgresql');
    install('mariadb-server');
    const r = run({ isRoot: true, aptGet: fakeAptGet('[ "$1" = install ] && shift && install_all "$@"; exit 0') });
    expect(r.code).toBe(0);
    expect(r.err).toEqual([]);
    expect(r.out).toEqual([
      'services: installing nginx chromium with apt-get (missing: nginx, Chromium)',
      `services: redis-server ${root}/usr/bin/redis-server, PostgreSQL ${root}/usr/lib/postgresql/17/bin, nginx ${root}/usr/sbin/nginx, Chromium ${root}/usr/bin/chromium, MariaDB ${root}/usr/sbin/mariadbd`,
    ]);
    expect(aptCalls()).toEqual([
      'DEBIAN_FRONTEND=noninteractive update -qq -o DPkg::Lock::Timeout=300',
      'DEBIAN_FRONTEND=noninteractive install -y -qq -o DPkg::Lock::Timeout=300 nginx chromium',
    ]);
  });

  test('root, apt-get fails: its last lines, then one line per missing service with the command that installs it; exit 1', () => {
    install('redis-server');
    install('mariadb-server');
    const r = run({ isRoot: true, aptGet: fakeAptGet('[ "$1" = install ] && echo "E: Unable to locate package nginx" >&2 && exit 100; exit 0') });
    expect(r.code).toBe(1);
    expect(r.err).toEqual([
      'services: apt-get did not install them; its last lines:',
      '  E: Unable to locate package nginx',
      'services: PostgreSQL is missing (apt-get failed); install it with: apt-get update && apt-get install -y postgresql',
      'services: nginx is missing (apt-get failed); install it with: apt-get update && apt-get install -y nginx',
      'services: Chromium is missing (apt-get failed); install it with: apt-get update && apt-get install -y chromium',
      'services: or all at once: apt-get update && apt-get install -y postgresql nginx chromium',
      'services: no test was run.',
    ]);
    expect(aptCalls()).toHaveLength(2);
  });

  test('root, apt-get update fails (one unreachable source) but the install works: exit 0', () => {
    for (const pkg of ['redis-server', 'postgresql', 'chromium', 'mariadb-server']) install(pkg);
    const r = run({ isRoot: true, aptGet: fakeAptGet('[ "$1" = update ] && exit 100; shift; install_all "$@"; exit 0') });
    expect(r.code).toBe(0);
    expect(r.err).toEqual([]);
    expect(aptCalls()).toHaveLength(2);
  });

  test('root, apt-get succeeds but a service is still not there: reported as missing', () => {
    for (const pkg of ['redis-server', 'postgresql', 'nginx', 'mariadb-server']) install(pkg);
    const r = run({ isRoot: true, aptGet: fakeAptGet('exit 0') });
    expect(r.code).toBe(1);
    expect(r.err).toEqual([
      'services: Chromium is missing (still not there after apt-get install); install it with: apt-get update && apt-get install -y chromium',
      'services: no test was run.',
    ]);
  });

  test('not root: nothing is run; each missing service with the sudo command', () => {
    install('postgresql');
    install('chromium');
    install('mariadb-server');
    const r = run({ isRoot: false, aptGet: fakeAptGet('exit 0') });
    expect(r).toEqual({
      code: 1,
      out: [],
      err: [
        'services: redis-server is missing (not root, so not installed here); install it with: sudo apt-get update && sudo apt-get install -y redis-server',
        'services: nginx is missing (not root, so not installed here); install it with: sudo apt-get update && sudo apt-get install -y nginx',
        'services: or all at once: sudo apt-get update && sudo apt-get install -y redis-server nginx',
        'services: no test was run.',
      ],
    });
    expect(aptCalls()).toEqual([]);
  });

  test('dry run as root: the exact apt-get commands, none run', () => {
    install('redis-server');
    install('postgresql');
    install('chromium');
    install('mariadb-server');
    const r = run({ isRoot: true, dryRun: true, aptGet: fakeAptGet('exit 0') });
    expect(r.code).toBe(0);
    expect(r.out).toEqual([
      'services: installing nginx with apt-get (missing: nginx)',
      `services: dry run: would run DEBIAN_FRONTEND=noninteractive ${dir}/apt-get update -qq -o DPkg::Lock::Timeout=300`,
      `services: dry run: would run DEBIAN_FRONTEND=noninteractive ${dir}/apt-get install -y -qq -o DPkg::Lock::Timeout=300 nginx`,
    ]);
    expect(aptCalls()).toEqual([]);
  });

  test('as `npm test` runs it (plain node, no stdin): a failed install exits 1 before any test, with the commands', () => {
    install('redis-server');
    install('postgresql');
    install('mariadb-server');
    const env: NodeJS.ProcessEnv = { ...process.env, MINIPROF_SERVICES_ROOT: root, MINIPROF_SERVICES_APT_GET: fakeAptGet('exit 100') };
    delete env.MINIPROF_SERVICES_DRYRUN;
    const r = spawnSync(process.execPath, [SCRIPT], { env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    const isRoot = process.getuid?.() === 0;
    const why = isRoot ? 'apt-get failed' : 'not root, so not installed here';
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      `services: nginx is missing (${why}); install it with: ${installCommand(['nginx'], isRoot)}`,
      `services: Chromium is missing (${why}); install it with: ${installCommand(['chromium'], isRoot)}`,
      `services: or all at once: ${installCommand(['nginx', 'chromium'], isRoot)}`,
      'services: no test was run.',
    ]);
  });
});

describe('vitest.config.ts: the lists `npm run test:quick` leaves out', () => {
  // Every folder under test/ (test/adapters/ too): vitest's include is test/**/*.test.ts, less
  // node_modules (test/otel3's install holds packages' own test files, which vitest never runs).
  const files = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .map((f) => `test/${f.split('\\').join('/')}`)
    // This file names the patterns it looks for.
    .filter((f) => f.endsWith('.test.ts') && f !== 'test/services.test.ts' && !f.includes('/node_modules/'));
  const text = (f: string): string => readFileSync(join(ROOT, f), 'utf8');

  test('every test file that starts a service or drives Chromium is in SERVICE_TESTS, and each listed file exists', () => {
    const starts = /\b(startRedis|startPostgres|startMariadb|startNginx|mariadbPath|redisServerPath|chromiumPath|postgresBinDir|nginxPath)\(|from 'playwright-core'/;
    expect(files.filter((f) => starts.test(text(f)) && !SERVICE_TESTS.includes(f))).toEqual([]);
    expect(SERVICE_TESTS.filter((f) => !files.includes(f))).toEqual([]);
    // The check can fail: the files known to start services are found by it.
    expect(files.filter((f) => starts.test(text(f))).sort()).toEqual([...SERVICE_TESTS].sort());
  });

  test('every test file that loads the built dist/ is in BUILD_TESTS, and each listed file exists', () => {
    const loadsDist = /['"`/]dist\//;
    expect(files.filter((f) => loadsDist.test(text(f)) && !BUILD_TESTS.includes(f))).toEqual([]);
    expect(BUILD_TESTS.filter((f) => !files.includes(f))).toEqual([]);
    expect(files.filter((f) => loadsDist.test(text(f))).sort()).toEqual([...BUILD_TESTS].sort());
  });
});
