import { VALUES_UNKNOWN, type CustomNode } from '../core/timing.js';
import type { CategorySummaryJSON, CustomTimingJSON, SimilarGroupJSON, TimingJSON } from '../core/types.js';
import { redact, shapeOf } from './normalize.js';
import { isPlumbing } from './plumbing.js';
import { unionMs } from './wall.js';

export interface CustomAnalysis {
  customSummary: CategorySummaryJSON[];
  similar: SimilarGroupJSON[];
  /**
   * At least the UTF-8 bytes all of it adds to the profile's JSON: the custom timings (with the
   * `"custom":[…]` around them), `customSummary` and `similar` (Profile.jsonBound).
   */
  bound: number;
}

/**
 * Bytes beyond 6 per UTF-16 unit of its strings (the longest escape is 6 bytes) for each custom
 * timing, category summary and similar group, rounded up from what their JSON can hold: a timing's
 * nine keys and punctuation (`traced` the ninth), quotes, a comma and three numbers of at most 24
 * characters come to 199, with `"custom":[]` 211; a summary's 159 and a group's 154, each with its list's key 178 at
 * most.
 */
const ITEM_BOUND = 256;

interface Group {
  count: number;
  durationMs: number;
  id: number;
  category: string;
  /** The first member's masked command: what the group's rows show, and so what it shows. */
  command: string;
}

/** Microsecond precision, as everywhere in the JSON. */
function us(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/**
 * Run once per snapshot (at seal, not per call): mark duplicates and similar groups on the JSON's
 * custom timings, which still carry their raw commands, then mask the commands unless `redact`
 * is off. Returns undefined when the profile has no custom timings, so such JSON is unchanged.
 *
 * A duplicate is the same category, the same command and the same values: the raw command is
 * compared, and so is the digest of the values sent apart from the text (pg's `$1`), which the
 * instrumentations put on the node (src/instrument/values.ts), never into the command. A command
 * with placeholders (`$1`, `?`, `:name`, `@p1`) and no digest ran with values nobody knows
 * (OpenTelemetry's instrumentation-pg without `enhancedDatabaseReporting`): never a duplicate, as
 * two of them may well differ. A command cut at `maxCommandLength` may differ from another only
 * past the cut, so it is never called a duplicate either; both can still be similar. Plumbing (a
 * pool checkout, see plumbing.ts) is neither. A group of similar commands is written as its first
 * member's row is (`select pg_sleep(?)`), so summaries read as the rows do. `nodes`: each custom
 * timing's node, for its dialect (how its command is masked) and its values digest.
 */
export function analyseCustom(
  root: TimingJSON,
  redactCommands: boolean,
  maxCommandLength: number,
  nodes: ReadonlyMap<CustomTimingJSON, CustomNode>,
): CustomAnalysis | undefined {
  const all: CustomTimingJSON[] = [];
  const stack: TimingJSON[] = [root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (t.custom !== undefined) for (const c of t.custom) all.push(c);
    for (let i = t.children.length - 1; i >= 0; i--) stack.push(t.children[i]!);
  }
  if (all.length === 0) return undefined;

  const exact = new Map<string, number>();
  const exactKeys: string[] = [];
  // Per distinct category, dialect and raw command: its redacted text, computed once and used for
  // both the shape and (unless redaction is off) the output.
  const masked = new Map<string, string>();
  const shapes = new Map<string, string>();
  const groups = new Map<string, Group>();
  const keys: string[] = [];
  const maskKeys: string[] = [];
  for (const c of all) {
    const node = nodes.get(c);
    const mkey = `${c.category}\0${node?.dialect ?? ''}\0${c.command}`;
    maskKeys.push(mkey);
    let shape = shapes.get(mkey);
    if (shape === undefined) {
      const m = redact(c.command, c.category, node?.dialect);
      masked.set(mkey, m);
      shapes.set(mkey, (shape = shapeOf(m)));
    }
    if (isPlumbing(c.category)) {
      exactKeys.push('');
      keys.push('');
      continue;
    }
    const values = node?.values;
    const unknown = values === VALUES_UNKNOWN || (values === undefined && PLACEHOLDER.test(c.command));
    const key = unknown ? '' : `${c.category}\0${c.command}\0${values ?? ''}`;
    exactKeys.push(key);
    if (key !== '') exact.set(key, (exact.get(key) ?? 0) + 1);
    const gkey = `${c.category}\0${shape}`;
    keys.push(gkey);
    const g = groups.get(gkey);
    if (g === undefined) groups.set(gkey, { count: 1, durationMs: c.durationMs, id: 0, category: c.category, command: masked.get(mkey)! });
    else {
      g.count++;
      g.durationMs += c.durationMs;
    }
  }

  const similar: SimilarGroupJSON[] = [];
  const cats = new Map<string, CategorySummaryJSON>();
  // Each category's [start, end] pairs, for its wall time.
  const spans = new Map<string, number[]>();
  let bound = 0;
  for (let i = 0; i < all.length; i++) {
    const c = all[i]!;
    let cat = cats.get(c.category);
    if (cat === undefined) {
      cats.set(c.category, (cat = { category: c.category, count: 0, durationMs: 0, wallMs: 0, duplicate: 0, similar: 0 }));
      spans.set(c.category, []);
    }
    cat.count++;
    cat.durationMs += c.durationMs;
    spans.get(c.category)!.push(c.startMs, c.startMs + c.durationMs);
    const key = exactKeys[i]!;
    if (key !== '' && exact.get(key)! > 1 && !wasCut(c.command, maxCommandLength)) {
      c.duplicate = true;
      cat.duplicate++;
    }
    const g = keys[i] === '' ? undefined : groups.get(keys[i]!)!;
    if (g !== undefined && g.count > 1) {
      if (g.id === 0) {
        g.id = similar.length + 1;
        similar.push({ id: g.id, category: g.category, command: g.command, count: g.count, durationMs: us(g.durationMs) });
        bound += ITEM_BOUND + 6 * (g.category.length + g.command.length);
      }
      c.similar = g.id;
      cat.similar++;
    }
    if (redactCommands) c.command = masked.get(maskKeys[i]!)!;
    bound += ITEM_BOUND + 6 * (c.category.length + c.command.length);
  }
  const customSummary = [...cats.values()];
  for (const s of customSummary) {
    s.durationMs = us(s.durationMs);
    s.wallMs = unionMs(spans.get(s.category)!, root.durationMs);
    bound += ITEM_BOUND + 6 * s.category.length;
  }
  return { customSummary, similar, bound };
}

/**
 * A parameter placeholder: PostgreSQL's `$1`, `?` (mysql2, SQLite, ODBC), `:name` / `:1` (Oracle,
 * SQLite), `@name` (SQL Server). `::int` is a cast, not a `:name`.
 */
const PLACEHOLDER = /\$\d|(?:^|[\s(,=<>])(?:\?(?=$|[\s),;])|(?<!:):(?!:)\w|@\w)/;

/** Cut by toText (src/core/names.ts): `...` at the end, at the limit or one short of it (a pair). */
function wasCut(command: string, max: number): boolean {
  return command.length >= max - 1 && command.endsWith('...');
}
