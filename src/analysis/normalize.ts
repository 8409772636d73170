/**
 * Literal values in command text (SQL, URLs, Redis keys), found in one left-to-right scan so a
 * quote inside a URL or a number inside a string is never read twice:
 *
 * 1. a single-quoted string (also `E'…'`, `N'…'`, `X'…'`, `B'…'`), with `''` and backslash escapes (MySQL's, which mysql2 uses when it
 *    interpolates values), running to the end of the text if it is unterminated (cut at
 *    `maxCommandLength`): masked;
 * 2. a PostgreSQL dollar-quoted string (`$$…$$`, `$tag$…$tag$`), to its closing tag or the end:
 *    masked;
 * 3. a double-quoted string: a string literal in MySQL's default mode, an identifier in standard
 *    SQL and PostgreSQL. Nothing in the text says which, so it is masked unless it stands where
 *    only a name can (see `nameAt`);
 * 4. a URL's scheme and host: kept, but any `user:password@` is masked, up to the last `@` of
 *    the authority (a raw `@` in a password is common and RFC 3986 does not stop parsers from
 *    taking it);
 * 5. a query parameter's value (`?key=value`, `&key=value`): masked, the key kept;
 * 6. a UUID, or a run of 16+ hex digits with a digit in it (an object id): masked;
 * 7. a number that is not part of a name (`42`, `-3.5`, `0x1f`; not `t1`, `$1`, `a.5`), with its
 *    sign unless that is an operator (`a-1`, `(x)-1`): masked.
 */
// Linear on any input: a quoted literal, once started, cannot fail (a lone trailing backslash is
// taken in, an unterminated one runs to the end), so no start position rescans the rest of the
// text; and a scheme can only start where a run of scheme characters starts (`a.a.a…` would
// otherwise offer a start at every letter). Quadratic inputs took ~0.8 s per 50,000 characters.
const LITERAL =
  /(?:(?<![\w$])[enbx])?'(?:[^'\\]|\\[\s\S]?|'')*(?:'|$)|(?<![\w$])\$(?<tag>[a-z_][a-z0-9_]*)?\$[\s\S]*?(?:\$\k<tag>\$|$)|(?<dq>"(?:[^"\\]|\\[\s\S]?)*(?:"|$))|(?<scheme>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*:\/\/)(?:[^/\s?#]*@)?(?<host>[^/\s?#@]*)|(?<key>[?&][^=&\s#?]+=)[^&\s#]*|(?<![\w$.)\]])(?:(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?=[a-f]*\d)[0-9a-f]{16,})(?![\w-])|(?:0x[0-9a-f]+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)(?!\w))/gi;

const MASK = '?';

interface Groups {
  dq?: string;
  scheme?: string;
  host?: string;
  key?: string;
}

function mask(m: string, ...rest: unknown[]): string {
  const g = rest[rest.length - 1] as Groups;
  if (g.dq !== undefined) return nameAt(rest[rest.length - 2] as string, rest[rest.length - 3] as number, m.length) ? m : MASK;
  if (g.scheme !== undefined) return m.length > g.scheme.length + g.host!.length ? `${g.scheme}${MASK}@${g.host}` : m;
  if (g.key !== undefined) return g.key + MASK;
  return MASK;
}

/** The words after which standard SQL takes a table, column or alias name, never a value. */
const NAME_BEFORE = /(?:^|[^\w$])(?:from|join|into|update|table|as)\s*$/i;

/**
 * A double-quoted token at `at` is a name (kept) where a value cannot stand: part of a qualified
 * name (`"t"."c"`, next to a dot), or right after `FROM`, `JOIN`, `INTO`, `UPDATE`, `TABLE` or
 * `AS`. Everywhere else (after `=`, `(`, `,`, `SELECT`…) it may be MySQL's string literal, and
 * is masked: a PostgreSQL column name masked there is a loss of detail, a MySQL value kept
 * there would be a leak. The look-back is bounded, so the scan stays linear.
 */
function nameAt(text: string, at: number, length: number): boolean {
  if (text.charCodeAt(at + length) === 0x2e) return true;
  const before = text.slice(Math.max(0, at - 12), at);
  return /\.\s*$/.test(before) || NAME_BEFORE.test(before);
}

/**
 * The command with its literal values masked as `?`: string literals, numbers, URL query values
 * and credentials, ids. The shape stays readable (`select * from users where id = ?`). This is
 * what every output shows unless the app opts out with `redact: false`.
 *
 * Not masked: double-quoted names where only a name can stand (`FROM "users"`, `"t"."c"`), and
 * names with digits in them (`t1`, `$1`).
 * In a PostgreSQL-style string a backslash right before a quote is read as an escape, which can
 * leave the rest of that literal unmasked; interpolating values into SQL text is what mysql2
 * does (with backslash escapes), while pg sends them as separate parameters.
 *
 * @example
 * redact("select * from t where name = 'bob' and id = 42") // "select * from t where name = ? and id = ?"
 */
export function redact(command: string): string {
  return command.replace(LITERAL, mask);
}

const LIST = /\(\s*(?:\?|\$\d+)(?:\s*,\s*(?:\?|\$\d+))*\s*\)/g;
const VALUES_ROWS = /(\(\.\.\.\))(?:\s*,\s*\(\.\.\.\))+/g;
const SPACE = /\s+/g;

/**
 * The shape two commands must share to be "similar" (the N+1 pattern): {@link redact}, then
 * every parenthesised list of values or placeholders becomes `(...)` (so `IN (1, 2)` and
 * `IN (1, 2, 3)` match, and so do multi-row `VALUES`), and runs of whitespace become one space.
 *
 * @example
 * normalize("select * from t where id in (1, 2, 3)") // "select * from t where id in (...)"
 */
export function normalize(command: string): string {
  return shapeOf(redact(command));
}

/** {@link normalize} for a command that is already redacted (the seal has both at hand). */
export function shapeOf(redacted: string): string {
  return redacted.replace(LIST, '(...)').replace(VALUES_ROWS, '$1').replace(SPACE, ' ').trim();
}
