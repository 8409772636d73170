import type { SqlDialect } from '../core/types.js';
import { emit, VALUE, mark } from './marks.js';
import { maskRedis } from './redis-mask.js';
import { DIALECTS, scanSql } from './sql-scan.js';
import { markUrl, maskHttp } from './url-mask.js';
import { valueLike } from './value-like.js';

/**
 * SQL as a profile keeps it: string literals (every dialect's kinds) and numbers become `?`,
 * comments are dropped (they can neither hide nor reveal anything then), quoted names
 * (`"users"."id"`, `` `order` ``, `[dbo].[t]`) and placeholders (`$1`, `?`, `:name`) are kept as
 * written, and the whole is one line. The dialect's own lexing rules decide (sql-scan.ts); with
 * no dialect, every dialect's scanner runs and a character is kept only if all of them keep it,
 * so whatever dialect the text really is in, all it holds as a value is masked (a double-quoted
 * name is then masked too, as MySQL would read a string there).
 *
 * @example
 * maskSql(`select "email" from "users" where id = 42 -- don't log`, 'postgres')
 * // 'select "email" from "users" where id = ?'
 */
export function maskSql(text: string, dialect?: SqlDialect): string {
  const marks = new Uint8Array(text.length);
  if (dialect !== undefined) scanSql(text, dialect, marks);
  else for (const d of DIALECTS) scanSql(text, d, marks);
  return emit(text, marks);
}

const HTTP_COMMAND = /^(?:[A-Za-z_-]+ +)?(?:[A-Za-z][A-Za-z0-9+.-]*:\/\/|\/)/;
const URL_IN_TEXT = /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"`<>]*/g;
const WORD = /[A-Za-z0-9_.-]+/g;

/**
 * A command of any other category (a name the app chose, an OpenTelemetry span's): everything
 * {@link maskSql} masks with no dialect, plus every URL as {@link maskHttp} masks it and every
 * word that looks like an id or a token (value-like.ts).
 */
function maskOther(text: string): string {
  const marks = new Uint8Array(text.length);
  for (const d of DIALECTS) scanSql(text, d, marks);
  for (const m of text.matchAll(URL_IN_TEXT)) markUrl(text, m.index, m.index + m[0].length, marks);
  for (const m of text.matchAll(WORD)) if (valueLike(m[0], true)) mark(marks, m.index, m.index + m[0].length, VALUE);
  return emit(text, marks);
}

/**
 * The command with its values masked, as every output shows it unless the app opts out with
 * `redact: false` (a captured profile never does): SQL by its dialect (`dialect`, where the
 * client that ran it says; else all of them), `redis` by key segments (redis-mask.ts), `http` as
 * a URL (url-mask.ts), any other category as unknown text (SQL literals, URLs, id-like words).
 *
 * @example
 * redact("select * from t where name = 'bob' and id = 42", 'sql', 'postgres') // "select * from t where name = ? and id = ?"
 * redact('GET apikey:sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'redis') // "GET apikey:?"
 */
export function redact(command: string, category?: string, dialect?: SqlDialect): string {
  if (dialect !== undefined) return maskSql(command, dialect);
  switch (category?.toLowerCase()) {
    case 'sql':
      return maskSql(command);
    case 'redis':
      return maskRedis(command);
    case 'http':
      // `GET https://…` or `GET /path` as the instrumentations write it; an app's own words otherwise.
      return HTTP_COMMAND.test(command) ? maskHttp(command) : maskOther(command);
    default:
      return maskOther(command);
  }
}

const LIST = /\(\s*(?:\?|\$\d+)(?:\s*,\s*(?:\?|\$\d+))*\s*\)/g;
const VALUES_ROWS = /(\(\.\.\.\))(?:\s*,\s*\(\.\.\.\))+/g;
const SPACE = /\s+/g;

/**
 * The shape two commands must share to be "similar" (the N+1 pattern): {@link redact}, then
 * every parenthesised list of values or placeholders becomes `(...)` (so `IN (1, 2)` and
 * `IN (1, 2, 3)` match, and so do multi-row `VALUES`). Names stay: `where "email" = $1` and
 * `where "username" = $1` are two shapes.
 *
 * @example
 * normalize('select * from t where id in (1, 2, 3)', 'sql', 'postgres') // "select * from t where id in (...)"
 */
export function normalize(command: string, category?: string, dialect?: SqlDialect): string {
  return shapeOf(redact(command, category, dialect));
}

/** {@link normalize} for a command that is already redacted (the seal has both at hand). */
export function shapeOf(redacted: string): string {
  return redacted.replace(LIST, '(...)').replace(VALUES_ROWS, '$1').replace(SPACE, ' ').trim();
}
