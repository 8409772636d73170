/**
 * The node-redis and mysql2 pairs: `@opentelemetry/instrumentation-redis` (which patches
 * @redis/client 1.x, 5.x and 6.x) against a real redis-server, `@opentelemetry/instrumentation-
 * mysql2` against mysql2's own server protocol over a real socket, with miniprof's own
 * `node-redis:command` / `node-redis:batch` (@redis/client 5.12+) and `mysql2:query` /
 * `mysql2:execute` channels on as well. Both instrumentations wrap the library's method and the
 * library publishes inside it, so the span starts first and miniprof's own timing takes its place.
 * Every call both see appears once, marked `traced`, and the spans still reach the exporter.
 *
 * In a file of its own: instrumentations patch modules as they are required (so redis and mysql2
 * are required after registering), and subscriptions are per process.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { MySQL2Instrumentation } from '@opentelemetry/instrumentation-mysql2';
import { RedisInstrumentation } from '@opentelemetry/instrumentation-redis';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { MiniprofSpanProcessor } from '../adapters/otel.js';
import { instrument, step, withProfile, type CoreOptions, type Profile, type TimingJSON } from '../src/index.js';
import { startMysqlServer } from './helpers/mysql-server.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

instrument();
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new MiniprofSpanProcessor(), new SimpleSpanProcessor(exporter)] });
provider.register({ contextManager: new AsyncLocalStorageContextManager() });
registerInstrumentations({ tracerProvider: provider, instrumentations: [new RedisInstrumentation(), new MySQL2Instrumentation()] });
const require = createRequire(import.meta.url);
const { createClient } = require('redis') as typeof import('redis');
const mysql = require('mysql2') as typeof import('mysql2');

const REDIS_SCOPE = '@opentelemetry/instrumentation-redis';
const MYSQL_SCOPE = '@opentelemetry/instrumentation-mysql2';

let redisServer: RedisServer;
let redis: ReturnType<typeof createClient>;
let sqlServer: Awaited<ReturnType<typeof startMysqlServer>>;
let sql: ReturnType<typeof mysql.createConnection>;

beforeAll(async () => {
  redisServer = await startRedis();
  redis = createClient({ url: redisServer.url });
  await redis.connect();
  sqlServer = await startMysqlServer((conn) => conn.writeOk());
  const { port } = sqlServer;
  sql = mysql.createConnection({ host: '127.0.0.1', port, user: 'u' });
  await sql.promise().connect();
});

afterAll(async () => {
  await redis?.quit();
  sql?.destroy();
  await sqlServer?.close();
  await redisServer?.kill();
  await provider.shutdown();
});

beforeEach(() => exporter.reset());

function calls(t: TimingJSON): string[] {
  return (t.custom ?? []).map((c) => `[${c.category}] ${c.command}${c.traced ? ' traced' : ''}${c.error ? ' (error)' : ''}`);
}

/** Every custom timing in the tree, by step name: nothing hides a copy elsewhere. */
function allCalls(t: TimingJSON, out: string[] = []): string[] {
  for (const c of calls(t)) out.push(`${t.name}: ${c}`);
  for (const ch of t.children) allCalls(ch, out);
  return out;
}

/** `work` in a profile opened under an active request span, as in an instrumented app. */
async function profiled(work: () => Promise<unknown>, options?: CoreOptions): Promise<Profile> {
  const { profile } = await trace.getTracer('test').startActiveSpan('GET /page', async (s) => {
    try {
      return await withProfile('job', work, options);
    } finally {
      s.end();
    }
  });
  return profile;
}

/** The client spans the SDK exported, as `scope name db.operation.name`. */
function exported(): string[] {
  return exporter
    .getFinishedSpans()
    .filter((x) => x.kind === SpanKind.CLIENT)
    .map((x) => `${x.instrumentationScope.name} ${x.name} ${String(x.attributes['db.operation.name'] ?? '')}`.trimEnd());
}

/** A prepared statement this server refuses: a real round trip that fails on the server. */
function execute(text: string, values: (string | number)[]): Promise<unknown> {
  return sql.promise().execute(text, values).then(
    () => expect.unreachable('the test server answers no prepared statements'),
    (err: Error) => expect(err.message).toContain('prepared statements'),
  );
}

describe('node-redis (@redis/client) with @opentelemetry/instrumentation-redis', () => {
  test('a command on the profile and in a step appears once, miniprof\'s own; the span is still exported', async () => {
    await redis.set('user:ada', 'ada');
    exporter.reset();
    const profile = await profiled(async () => {
      expect(await redis.get('user:ada')).toBe('ada');
      await step('cache', () => redis.get('user:bob'));
    });
    const root = profile.toJSON().root;
    expect(allCalls(root)).toEqual(['job: [redis] GET user:ada traced', 'cache: [redis] GET user:bob traced']);
    expect(exported()).toEqual([`${REDIS_SCOPE} redis-GET GET`, `${REDIS_SCOPE} redis-GET GET`]);
  });

  test('concurrent commands under one step: each once', async () => {
    // node-redis itself publishes HGETALL's key as `?` (it lists the commands whose arguments it
    // deems safe): the text is miniprof's, from the channel, not the span's.
    const profile = await profiled(() => step('load', () => Promise.all([redis.get('a'), redis.get('b'), redis.hGetAll('hash:ada'), redis.get('c')])));
    expect(allCalls(profile.toJSON().root)).toEqual([
      'load: [redis] GET a traced',
      'load: [redis] GET b traced',
      'load: [redis] HGETALL ? traced',
      'load: [redis] GET c traced',
    ]);
    expect(exported()).toHaveLength(4);
  });

  test('a MULTI is one call to miniprof and one span per queued command to OpenTelemetry: it appears once; a pipeline, each command once', async () => {
    const profile = await profiled(() =>
      step('save', async () => {
        await redis.multi().set('m:a', 'x').get('m:a').incr('m:n').exec();
        await redis.multi().get('p:a').get('p:b').execAsPipeline();
      }),
    );
    expect(allCalls(profile.toJSON().root)).toEqual(['save: [redis] MULTI (3 commands) traced', 'save: [redis] GET p:a traced', 'save: [redis] GET p:b traced']);
    expect(exported()).toEqual([
      `${REDIS_SCOPE} redis-SET MULTI`,
      `${REDIS_SCOPE} redis-GET MULTI`,
      `${REDIS_SCOPE} redis-INCR MULTI`,
      `${REDIS_SCOPE} redis-GET PIPELINE GET`,
      `${REDIS_SCOPE} redis-GET PIPELINE GET`,
    ]);
  });

  test('the spans a MULTI leaves out give their place back under maxSteps', async () => {
    // Three spans take three places as the commands are queued; at EXEC they are one call.
    const profile = await profiled(async () => {
      await redis.multi().set('q:a', 'x').get('q:a').incr('q:n').exec();
      await redis.get('q:b');
    }, { maxSteps: 3 });
    expect(allCalls(profile.toJSON().root)).toEqual(['job: [redis] MULTI (3 commands) traced', 'job: [redis] GET q:b traced']);
    expect(profile.toJSON().droppedSteps).toBe(0);
  });

  test('two MULTIs and plain commands at once under one step: each MULTI once, each command once', async () => {
    const profile = await profiled(() =>
      step('save', () =>
        Promise.all([
          redis.multi().set('c:a', 'x').get('c:a').exec(),
          redis.get('c:b'),
          redis.multi().incr('c:c').exec(),
          redis.get('c:d'),
        ]),
      ),
    );
    expect(allCalls(profile.toJSON().root)).toEqual([
      'save: [redis] MULTI (2 commands) traced',
      'save: [redis] GET c:b traced',
      'save: [redis] MULTI (1 commands) traced',
      'save: [redis] GET c:d traced',
    ]);
    expect(exported()).toHaveLength(5);
  });
});

describe('mysql2 with @opentelemetry/instrumentation-mysql2', () => {
  test('a query on the profile and in a step appears once, miniprof\'s own; the span is still exported', async () => {
    const profile = await profiled(async () => {
      await sql.promise().query('select * from users where id = 1');
      await step('orders', () =>
        new Promise<void>((resolve, reject) => sql.query('select * from orders where user_id = ?', [1], (err) => (err ? reject(err) : resolve()))),
      );
    });
    expect(allCalls(profile.toJSON().root)).toEqual(['job: [sql] select * from users where id = ? traced', 'orders: [sql] select * from orders where user_id = ? traced']);
    expect(exported()).toEqual([`${MYSQL_SCOPE} select`, `${MYSQL_SCOPE} select`]);
  });

  test('execute (a prepared statement): once, its parameters never in the command (issue 57 item 2)', async () => {
    const profile = await profiled(() => step('find', () => execute('select * from users where email = ?', ['bob@example.com'])));
    expect(allCalls(profile.toJSON().root)).toEqual(['find: [sql] select * from users where email = ? traced (error)']);
    expect(exported()).toEqual([`${MYSQL_SCOPE} select`]);
    expect(JSON.stringify(profile.toJSON())).not.toContain('bob@example.com');
  });

  test('concurrent queries and executes under one step: each once', async () => {
    const profile = await profiled(() =>
      step('load', () =>
        Promise.all([
          sql.promise().query('select * from a'),
          execute('select * from b where id = ?', [2]),
          sql.promise().query('select * from c'),
          execute('select * from d where id = ?', [4]),
        ]),
      ),
    );
    expect(allCalls(profile.toJSON().root)).toEqual([
      'load: [sql] select * from a traced',
      'load: [sql] select * from b where id = ? traced (error)',
      'load: [sql] select * from c traced',
      'load: [sql] select * from d where id = ? traced (error)',
    ]);
    expect(exported()).toHaveLength(4);
  });
});

test('calls inside an internal span (a GraphQL resolver, an ORM operation) nested in a step: each once, under the step made from that span', async () => {
  const tracer = trace.getTracer('test');
  const profile = await profiled(() =>
    step('load', () =>
      tracer.startActiveSpan('resolver', async (s) => {
        try {
          await Promise.all([
            redis.get('r:a'),
            redis.multi().get('r:b').get('r:c').exec(),
            sql.promise().query('select * from r'),
            execute('select * from r where id = ?', [5]),
          ]);
        } finally {
          s.end();
        }
      }),
    ),
  );
  const load = profile.toJSON().root.children[0]!;
  expect(load.name).toBe('load');
  expect(load.children.map((c) => c.name)).toEqual(['resolver']);
  expect(allCalls(profile.toJSON().root)).toEqual([
    'resolver: [redis] GET r:a traced',
    'resolver: [redis] MULTI (2 commands) traced',
    'resolver: [sql] select * from r traced',
    'resolver: [sql] select * from r where id = ? traced (error)',
  ]);
});
