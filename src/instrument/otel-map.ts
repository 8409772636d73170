import type { SqlDialect } from '../core/types.js';
import { valuesDigest } from './values.js';
import { CONNECT } from '../analysis/plumbing.js';

/**
 * What an OpenTelemetry span becomes in a profile, read from its kind, name, attributes and
 * instrumentation scope by their names in the semantic conventions (stable and older ones alike).
 * Nothing here loads OpenTelemetry: miniprof/otel hands the span's parts over.
 */

/** OpenTelemetry's `SpanKind` values. */
export const SERVER = 1;
export const CLIENT = 2;
export const PRODUCER = 3;

/**
 * The parts of a span this file reads, as the SDK's spans have them (so the span itself is passed,
 * and nothing is allocated for it): the instrumentation scope (`@opentelemetry/instrumentation-pg`)
 * is `instrumentationScope` since SDK 2, `instrumentationLibrary` before.
 */
export interface SpanParts {
  readonly kind: number;
  readonly name: string;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly instrumentationScope?: { readonly name: string };
  readonly instrumentationLibrary?: { readonly name: string };
  spanContext(): { readonly traceId: string };
}

function scopeOf(s: SpanParts): string | undefined {
  return (s.instrumentationScope ?? s.instrumentationLibrary)?.name;
}

/** {@link classify}'s answer for a span that becomes a step. */
export const STEP = '';

/** The scope of the spans `exportProfile` makes: never fed back into a profile. */
export const EXPORT_SCOPE = 'miniprof';

/** `db.system.name` / `db.system` values of SQL databases (both conventions' spellings). */
const SQL_SYSTEMS = new Set([
  'postgresql', 'mysql', 'mariadb', 'mssql', 'microsoft.sql_server', 'mssqlcompact', 'oracle', 'oracle.db', 'db2', 'ibm.db2',
  'sqlite', 'cockroachdb', 'trino', 'clickhouse', 'h2', 'h2database', 'hsqldb', 'derby', 'firebird', 'firebirdsql', 'hanadb',
  'sap.hana', 'maxdb', 'sap.maxdb', 'informix', 'ingres', 'actian.ingres', 'netezza', 'teradata', 'vertica', 'sybase',
  'progress', 'pervasive', 'pointbase', 'hive', 'spanner', 'gcp.spanner', 'cache', 'intersystems.cache', 'edb', 'redshift',
  'aws.redshift', 'other_sql', 'instantdb', 'adabas', 'cloudscape', 'filemaker', 'interbase', 'mimer', 'mimersql',
]);

/**
 * The OpenTelemetry instrumentations of libraries miniprof also times itself (src/instrument/
 * channels.ts, instrumentPg), by scope name, with the library's name as openCall knows it.
 * Not `@opentelemetry/instrumentation-redis-4`: it patches only @redis/client 1.x (redis 4),
 * which publishes no `node-redis:command`, so miniprof never sees those calls and the span stays.
 */
const OWN_LIBS: ReadonlyMap<string, string> = new Map([
  ['@opentelemetry/instrumentation-http', 'http'],
  ['@opentelemetry/instrumentation-undici', 'undici'],
  ['@opentelemetry/instrumentation-ioredis', 'ioredis'],
  ['@opentelemetry/instrumentation-redis', 'node-redis'],
  ['@opentelemetry/instrumentation-mysql2', 'mysql2'],
  ['@opentelemetry/instrumentation-pg', 'pg'],
]);

/** Spans for opening a database connection (pg, ioredis, node-redis): plumbing, not commands. */
const CONNECT_SPANS = new Set(['pg.connect', 'pg-pool.connect', 'connect', 'redis-connect']);

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

/** The database system, lowercased, or undefined for a span that is not a database call. */
function dbSystem(a: SpanParts['attributes']): string | undefined {
  return (str(a['db.system.name']) ?? str(a['db.system']))?.toLowerCase();
}

function httpMethod(a: SpanParts['attributes']): string | undefined {
  const m = str(a['http.request.method']) ?? str(a['http.method']);
  // `_OTHER`: the stable conventions' name for a method outside the known set.
  return m === '_OTHER' ? (str(a['http.request.method_original']) ?? m) : m;
}

/**
 * What a span becomes, read once as it starts: null, nothing (the request's own server span, one
 * `exportProfile` made); {@link STEP}, a step nested as the spans nest; else a custom timing of
 * this category: `connect` for opening or checking out a connection, `sql` for SQL databases, else the database system's own name (`redis`,
 * `mongodb`…); `http` for an HTTP client call; the RPC or messaging system (`grpc`, `aws-api`,
 * `kafka`) for other client and producer spans.
 */
export function classify(s: SpanParts): string | null {
  const kind = s.kind;
  if (kind === SERVER || scopeOf(s) === EXPORT_SCOPE) return null;
  const a = s.attributes;
  const db = dbSystem(a);
  if (db !== undefined) {
    // Opening a connection (or checking one out of a pool) is time spent, but not a command:
    // plumbing, its own category, out of the N+1 and duplicate counts (where every checkout would
    // read as a repeated query), of folds and of Server-Timing (src/analysis/plumbing.ts).
    if (CONNECT_SPANS.has(s.name)) return CONNECT;
    return SQL_SYSTEMS.has(db) ? 'sql' : db;
  }
  if (kind !== CLIENT && kind !== PRODUCER) return STEP;
  if (kind === CLIENT && httpMethod(a) !== undefined) return 'http';
  const system = str(a['rpc.system']) ?? str(a['messaging.system']);
  return system === undefined ? STEP : system.toLowerCase();
}

/** The SQL dialects of the `db.system` values whose masking miniprof knows (others: unknown). */
const DIALECTS: ReadonlyMap<string, SqlDialect> = new Map([
  ['postgresql', 'postgres'], ['cockroachdb', 'postgres'], ['redshift', 'postgres'], ['aws.redshift', 'postgres'], ['edb', 'postgres'],
  ['mysql', 'mysql'], ['mariadb', 'mysql'],
  ['mssql', 'mssql'], ['microsoft.sql_server', 'mssql'], ['mssqlcompact', 'mssql'],
  ['sqlite', 'sqlite'],
]);

/** The SQL dialect of a database span's command, from `db.system.name` / `db.system`; else undefined. */
export function dialectOf(s: SpanParts): SqlDialect | undefined {
  const db = dbSystem(s.attributes);
  return db === undefined ? undefined : DIALECTS.get(db);
}

/**
 * A digest of the parameter values a database span carries (pg's `enhancedDatabaseReporting`:
 * `db.postgresql.values`; positional `db.query.parameter.<n>`), never the values: duplicate
 * detection compares it (src/instrument/values.ts). Undefined when there are none.
 */
export function valuesOf(s: SpanParts): string | undefined {
  return dbSystem(s.attributes) === undefined ? undefined : valuesDigest(paramsOf(s.attributes));
}

/**
 * The command, raw as miniprof's own instrumentation records it (the profile masks its values at
 * the seal, src/analysis/normalize.ts, so N+1 and duplicate detection read the same shapes):
 * - a database call: its query text (`db.query.text`, `db.statement`) alone (parameter values
 *   are never appended: see {@link valuesOf}); else the operation and collection, else the
 *   span's name;
 * - an HTTP call: `GET http://host:port/path?query`, as miniprof's own;
 * - anything else: the span's name.
 */
export function commandOf(s: SpanParts): string {
  const a = s.attributes;
  if (dbSystem(a) !== undefined) {
    const text = str(a['db.query.text']) ?? str(a['db.statement']);
    if (text !== undefined) return text;
    const op = str(a['db.operation.name']) ?? str(a['db.operation']);
    const target = str(a['db.collection.name']) ?? str(a['db.mongodb.collection']) ?? str(a['db.sql.table']);
    if (op !== undefined) return target === undefined ? op : `${op} ${target}`;
    return s.name;
  }
  const method = s.kind === CLIENT ? httpMethod(a) : undefined;
  if (method !== undefined) return `${method} ${urlOf(a)}`;
  return s.name;
}

function paramsOf(a: SpanParts['attributes']): unknown[] | undefined {
  const pg = a['db.postgresql.values'];
  if (Array.isArray(pg)) return pg;
  // Positional parameters start at 0; the walk over every attribute is only made for them.
  if (a['db.query.parameter.0'] === undefined) return undefined;
  let out: unknown[] | undefined;
  for (const key in a) {
    if (key.startsWith('db.query.parameter.')) (out ??= []).push(a[key]);
  }
  return out;
}

function urlOf(a: SpanParts['attributes']): string {
  const full = str(a['url.full']) ?? str(a['http.url']);
  if (full !== undefined) return full;
  const scheme = str(a['url.scheme']) ?? str(a['http.scheme']) ?? 'http';
  const host = str(a['server.address']) ?? str(a['net.peer.name']) ?? str(a['http.host']) ?? '';
  const port = a['server.port'] ?? a['net.peer.port'];
  const path = str(a['url.path']) ?? str(a['http.target']) ?? '';
  const query = str(a['url.query']);
  const hostPort = port === undefined || host.includes(':') ? host : `${host}:${String(port)}`;
  return `${scheme}://${hostPort}${path}${query === undefined ? '' : `?${query}`}`;
}

/**
 * The library whose calls miniprof may also time itself, for a custom-timing span of one of those
 * calls; else null, and the span is recorded whatever miniprof does.
 */
export function ownLibOf(s: SpanParts): string | null {
  const scope = scopeOf(s);
  const lib = scope === undefined ? undefined : OWN_LIBS.get(scope);
  return lib ?? null;
}

/** OpenTelemetry's time: `[seconds, nanoseconds]` since the epoch. */
export type HrTime = [number, number];

/**
 * The SDK takes a span's start from `Date.now()` (whole milliseconds) and calls onStart right
 * away, so a live span reads 0-1 ms old; older, its start was given (Prisma's engine spans are
 * made after the fact), and it is placed that far back.
 */
export function lagUs(start: HrTime | undefined): number {
  // A span of an SDK that has no start time (not OpenTelemetry's) is taken as started now.
  if (!Array.isArray(start)) return 0;
  const lagMs = Date.now() - (start[0] * 1e3 + start[1] / 1e6);
  return lagMs > 2 ? Math.round(lagMs * 1e3) : 0;
}

/** An HrTime in whole microseconds; 0 for anything else. */
export function usOf(t: HrTime | undefined): number {
  return Array.isArray(t) ? Math.round(t[0] * 1e6 + t[1] / 1e3) : 0;
}

export function hr(ms: number): HrTime {
  const s = Math.floor(ms / 1e3);
  return [s, Math.round((ms - s * 1e3) * 1e6)];
}
