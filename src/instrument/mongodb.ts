import { codedError } from '../core/errors.js';
import { closeCall, openCall, type OpenCall } from './record.js';

/** The public face of a mongodb `MongoClient` that is used: its command monitoring events. */
export interface MongoClientLike {
  on(event: string, listener: (e: any) => void): unknown;
  options?: { monitorCommands?: unknown };
}

interface CommandStarted {
  requestId: number;
  commandName: string;
  command: Record<string, unknown>;
}

const DONE = Symbol('miniprof.mongodb');

/**
 * Time every command of a `MongoClient` through the driver's command monitoring
 * (`commandStarted`, then `commandSucceeded` or `commandFailed`, matched by `requestId`). The
 * driver emits `commandStarted` from the operation's own promise chain, so the call lands under
 * the step that awaited it. The client must be made with `{ monitorCommands: true }` (Mongoose:
 * `mongoose.connect(uri, { monitorCommands: true })`): without it the driver emits nothing, and
 * this is a TypeError rather than a silent no-op.
 *
 * The command is `<name> <collection> <what it matches>`, every value masked:
 * `find users {email:?}`, `update users [{q:{_id:?}}]`, `insert users`. Keys are written bare
 * (not as JSON strings): the profile's SQL-style masking would read a quoted key as a literal.
 */
export function instrumentMongo(client: MongoClientLike): void {
  const c = client as MongoClientLike & { [DONE]?: true };
  if (c[DONE] === true) return;
  if (client.options?.monitorCommands !== true) {
    throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', 'instrument(MongoClient) cannot time it: the client was made without `monitorCommands: true`, so the driver reports no command (new MongoClient(uri, { monitorCommands: true }); Mongoose: mongoose.connect(uri, { monitorCommands: true })).');
  }
  Object.defineProperty(c, DONE, { value: true });
  const open = new Map<number, OpenCall>();
  client.on('commandStarted', (e: CommandStarted) => {
    const call = openCall('mongodb', 'mongodb', mongoCommand, e, undefined, undefined, commandValues);
    if (call !== undefined) open.set(e.requestId, call);
  });
  const settle = (failed: boolean) => (e: { requestId: number }) => {
    const call = open.get(e.requestId);
    if (call === undefined) return;
    open.delete(e.requestId);
    closeCall(call, failed);
  };
  client.on('commandSucceeded', settle(false));
  client.on('commandFailed', settle(true));
}

/** The parts of each command that say what it reads or writes. */
const SHAPE: Record<string, string> = { find: 'filter', count: 'query', distinct: 'query', findAndModify: 'query', aggregate: 'pipeline', update: 'updates', delete: 'deletes' };

export function mongoCommand(e: CommandStarted): string {
  const name = e.commandName;
  const target = e.command?.[name];
  let out = typeof target === 'string' ? `${name} ${target}` : name;
  const part = SHAPE[name];
  if (part !== undefined && e.command[part] !== undefined) {
    const shown = name === 'update' || name === 'delete' ? (e.command[part] as { q?: unknown }[]).map?.((u) => ({ q: u?.q })) : e.command[part];
    out += ` ${shape(shown, 0)}`;
  }
  return out;
}

/** Every value replaced by `?`; keys (field names and `$` operators) kept; depth bounded. */
export function shape(v: unknown, depth: number): string {
  if (v === null || typeof v !== 'object' || depth > 8) return '?';
  if (Array.isArray(v)) return `[${v.map((x) => shape(x, depth + 1)).join(',')}]`;
  // A BSON value (ObjectId, Date, Decimal128, Binary…) is a value, not a document.
  const bson = (v as { _bsontype?: unknown })._bsontype;
  if (typeof bson === 'string' || v instanceof Date || v instanceof Uint8Array) return '?';
  return `{${Object.entries(v).map(([k, x]) => `${k}:${shape(x, depth + 1)}`).join(',')}}`;
}

/**
 * What tells two commands of one shape apart, for duplicates: the command's own fields, without
 * the driver's per-call bookkeeping (`lsid`, `txnNumber`, `$clusterTime`, `$db`…), which differs on
 * every call. Kept only as a digest (src/instrument/values.ts), never in the command text.
 */
function commandValues(e: CommandStarted): unknown[] {
  const out: Record<string, unknown> = {};
  if (e.command === null || typeof e.command !== 'object') return [];
  for (const [k, v] of Object.entries(e.command)) if (!k.startsWith('$') && k !== 'lsid' && k !== 'txnNumber') out[k] = v;
  return [out];
}
