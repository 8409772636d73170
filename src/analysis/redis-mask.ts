import { emit, mark, VALUE } from './marks.js';
import { markUrl } from './url-mask.js';
import { valueLike } from './value-like.js';

/**
 * Commands whose first argument is no key (a password, a script, a setting): it is masked whole.
 * Every other command's first argument is a key, masked segment by segment.
 */
const NO_KEY = new Set([
  'AUTH', 'HELLO', 'ACL', 'CONFIG', 'CLIENT', 'EVAL', 'EVAL_RO', 'EVALSHA', 'EVALSHA_RO', 'FCALL', 'FCALL_RO', 'SCRIPT',
  'FUNCTION', 'MIGRATE', 'ECHO', 'PING', 'SELECT', 'SWAPDB', 'DEBUG', 'MODULE', 'SENTINEL', 'CLUSTER', 'FAILOVER',
  'REPLICAOF', 'SLAVEOF', 'SHUTDOWN',
]);

/** What separates a key's segments: `user:42:profile`, `cache/users/7`, `{user:1}|x`. */
const SEPARATOR = /[:/{}|]/;

/**
 * A Redis command as a profile keeps it: the command name and the key's namespace words
 * (`GET apikey:?`, `SET session:?`, `HGETALL user:?:profile`); any key segment that looks like a
 * value (value-like.ts: digits, hex, UUIDs, tokens, anything holding `=`, `%`, `.`) masked, the
 * whole first argument of AUTH, HELLO, CONFIG, EVAL… masked, and every further argument masked
 * (all of them one `?`).
 * A node-redis MULTI (`MULTI (3 commands)`) is kept as it is.
 */
export function maskRedis(command: string): string {
  if (/^MULTI \(\d+ commands\)$/.test(command)) return command;
  const marks = new Uint8Array(command.length);
  const words = /\S+/g;
  let m: RegExpExecArray | null;
  let name = '';
  let n = 0;
  while ((m = words.exec(command)) !== null) {
    const from = m.index;
    const to = from + m[0].length;
    if (n === 0) {
      name = m[0].toUpperCase();
      if (!/^[A-Z][A-Z._-]*$/.test(name)) mark(marks, from, to, VALUE);
    } else if (n === 1 && !NO_KEY.has(name)) markKey(command, from, to, marks);
    else {
      // Every argument after the key, as one `?` (OpenTelemetry's `[1 other arguments]` too).
      mark(marks, from, command.length, VALUE);
      break;
    }
    n++;
  }
  return emit(command, marks);
}

/** A key's segments, each masked if it looks like a value; a URL as a URL (its password dropped). */
function markKey(text: string, from: number, to: number, marks: Uint8Array): void {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text.slice(from, Math.min(to, from + 40)))) return markUrl(text, from, to, marks);
  let a = from;
  for (let i = from; i <= to; i++) {
    if (i === to || SEPARATOR.test(text[i]!)) {
      if (valueLike(text.slice(a, i))) mark(marks, a, i, VALUE);
      a = i + 1;
    }
  }
}
