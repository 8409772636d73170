// The Debian services the test suite starts throwaway copies of (a real redis-server, PostgreSQL,
// nginx, Chromium, MariaDB), found in one place: `npm test` runs this file first (npm's `pretest`) so that
// a fresh machine of the project's kind (Debian, root) gets whatever is missing from apt, and
// anywhere else the run stops before any test with one line per missing service and the command
// that installs it. The test helpers (test/helpers/services.ts) locate the binaries with the same
// functions, so a test never finds something this script did not check.
//
// For tests of this script's own logic (test/services.test.ts), never for a real run:
//   MINIPROF_SERVICES_ROOT=dir   look for the Debian paths under dir instead of / (and ignore PATH)
//   MINIPROF_SERVICES_APT_GET=f  the apt-get to run (default: apt-get from PATH)
//   MINIPROF_SERVICES_DRYRUN=1   print the apt-get commands instead of running them
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Debian's `nginx` is in /usr/sbin, which is not on a normal user's PATH. */
const DEBIAN = {
  redis: '/usr/bin/redis-server',
  chromium: '/usr/bin/chromium',
  postgresql: '/usr/lib/postgresql',
  nginx: '/usr/sbin/nginx',
  mariadb: '/usr/sbin/mariadbd',
};

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function under(root, path) {
  return root === '/' ? path : join(root, path);
}

/** `name` in PATH, as the shell would find it; not consulted when a test sets its own root. */
function onPath(name, root) {
  if (root !== '/') return null;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && executable(join(dir, name))) return join(dir, name);
  }
  return null;
}

/** Debian's redis-server, else one on PATH; null when there is none. */
export function findRedisServer(root = '/') {
  const debian = under(root, DEBIAN.redis);
  return executable(debian) ? debian : onPath('redis-server', root);
}

/** Debian's Chromium; playwright-core drives exactly this binary (never a downloaded browser). */
export function findChromium(root = '/') {
  const debian = under(root, DEBIAN.chromium);
  return executable(debian) ? debian : null;
}

/**
 * The bin directory of Debian's newest PostgreSQL (`/usr/lib/postgresql/<major>/bin`, which
 * holds `initdb` and `postgres`; neither is on PATH), or null.
 */
export function findPostgresBin(root = '/') {
  const base = under(root, DEBIAN.postgresql);
  let versions;
  try {
    versions = readdirSync(base);
  } catch {
    return null;
  }
  versions.sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = join(base, v, 'bin');
    if (executable(join(bin, 'initdb')) && executable(join(bin, 'postgres'))) return bin;
  }
  return null;
}

/** Debian's nginx (/usr/sbin/nginx), else one on PATH; null when there is none. */
export function findNginx(root = '/') {
  const debian = under(root, DEBIAN.nginx);
  return executable(debian) ? debian : onPath('nginx', root);
}

/** Debian's MariaDB server (/usr/sbin/mariadbd; mysql2 and knex's MySQL client test against it), else one on PATH. */
export function findMariadb(root = '/') {
  const debian = under(root, DEBIAN.mariadb);
  return executable(debian) ? debian : onPath('mariadbd', root);
}

/** Every service the suite uses: how to find it and the Debian package that provides it. */
export const SERVICES = [
  { name: 'redis-server', debianPackage: 'redis-server', find: findRedisServer },
  { name: 'PostgreSQL', debianPackage: 'postgresql', find: findPostgresBin },
  { name: 'nginx', debianPackage: 'nginx', find: findNginx },
  { name: 'Chromium', debianPackage: 'chromium', find: findChromium },
  { name: 'MariaDB', debianPackage: 'mariadb-server', find: findMariadb },
];

/** The one command that installs `packages`, as the person reading it has to type it. */
export function installCommand(packages, asRoot) {
  const sudo = asRoot ? '' : 'sudo ';
  return `${sudo}apt-get update && ${sudo}apt-get install -y ${packages.join(' ')}`;
}

const APT_OPTIONS = [
  '-qq',
  // Another apt run (a second checkout's tests, an unattended upgrade) may hold the lock: wait.
  '-o',
  'DPkg::Lock::Timeout=300',
];

function apt(aptGet, args, dryRun) {
  if (dryRun) {
    console.log(`services: dry run: would run DEBIAN_FRONTEND=noninteractive ${aptGet} ${args.join(' ')}`);
    return { ok: true, output: '' };
  }
  const r = spawnSync(aptGet, args, {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error.message) : ''}`;
  return { ok: r.status === 0, output };
}

/**
 * Finds every service, installs the missing ones with apt-get when running as root, and
 * returns the exit code: 0 when everything is there (or, in a dry run, would be installed).
 */
export function ensureServices({
  root = process.env.MINIPROF_SERVICES_ROOT || '/',
  aptGet = process.env.MINIPROF_SERVICES_APT_GET || 'apt-get',
  dryRun = Boolean(process.env.MINIPROF_SERVICES_DRYRUN),
  isRoot = process.getuid?.() === 0,
} = {}) {
  const found = () => console.log(`services: ${SERVICES.map((s) => `${s.name} ${s.find(root)}`).join(', ')}`);
  let missing = SERVICES.filter((s) => s.find(root) === null);
  if (missing.length === 0) {
    found();
    return 0;
  }
  const packages = missing.map((s) => s.debianPackage);
  let aptOutput = '';
  let aptOk = false;
  if (isRoot) {
    console.log(`services: installing ${packages.join(' ')} with apt-get (missing: ${missing.map((s) => s.name).join(', ')})`);
    const update = apt(aptGet, ['update', ...APT_OPTIONS], dryRun);
    // A failed update (one unreachable source) may still leave lists that have the packages.
    const install = apt(aptGet, ['install', '-y', ...APT_OPTIONS, ...packages], dryRun);
    if (dryRun) return 0;
    aptOutput = update.ok ? install.output : `${update.output}\n${install.output}`;
    aptOk = install.ok;
    missing = missing.filter((s) => s.find(root) === null);
    if (missing.length === 0) {
      found();
      return 0;
    }
  }
  if (!aptOk && aptOutput.trim() !== '') {
    console.error(`services: apt-get did not install them; its last lines:`);
    console.error(aptOutput.trim().split('\n').slice(-10).map((l) => `  ${l}`).join('\n'));
  }
  const why = !isRoot ? 'not root, so not installed here' : aptOk ? 'still not there after apt-get install' : 'apt-get failed';
  for (const s of missing) {
    console.error(`services: ${s.name} is missing (${why}); install it with: ${installCommand([s.debianPackage], isRoot)}`);
  }
  if (missing.length > 1) {
    console.error(`services: or all at once: ${installCommand(missing.map((s) => s.debianPackage), isRoot)}`);
  }
  console.error('services: no test was run.');
  return 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = ensureServices();
}
