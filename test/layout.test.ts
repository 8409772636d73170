// The layout the code is meant to have, checked from the import statements themselves: no import
// circles (type-only imports included), core below http and results, adapters thin and apart.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => join(dir, f));
}

/** Every module's local imports (static, `export … from`, `import type`, dynamic), as repo paths. */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of [...files('src'), ...files('adapters')]) {
    const text = readFileSync(join(ROOT, f), 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      if (!spec.startsWith('.')) continue;
      deps.push(relative(ROOT, resolve(ROOT, dirname(f), spec)).replace(/\.js$/, '.ts'));
    }
    g.set(f, deps);
  }
  return g;
}

/** Every cycle found by a depth-first walk, each as the path that closes it. */
function cycles(g: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const d of g.get(f) ?? []) {
      if (state.get(d) === 'open') found.push([...stack.slice(stack.indexOf(d)), d]);
      else if (state.get(d) === undefined) visit(d);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of [...g.keys()].sort()) if (state.get(f) === undefined) visit(f);
  return found;
}

describe('layout', () => {
  const g = graph();

  it('every local import resolves to a module of the repo', () => {
    const missing = [...g].flatMap(([f, deps]) => deps.filter((d) => !g.has(d)).map((d) => `${f} -> ${d}`));
    expect(missing).toEqual([]);
  });

  it('no import circles in src/ and adapters/, type-only imports included', () => {
    expect(cycles(g).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('the cycle finder finds a circle (so the test above can fail)', () => {
    const c = cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]));
    expect(c).toEqual([['a', 'b', 'c', 'a']]);
  });

  it('src/core imports neither src/http, src/results nor an adapter; src never imports an adapter', () => {
    const bad = [...g].flatMap(([f, deps]) =>
      deps
        .filter((d) => (f.startsWith('src/core/') && /^(src\/http|src\/results|adapters)\//.test(d)) || (f.startsWith('src/') && d.startsWith('adapters/')))
        .map((d) => `${f} -> ${d}`),
    );
    expect(bad).toEqual([]);
  });

  // JSDoc with an example on every export is wanted; it is the code that must stay thin.
  const codeLines = (text: string) => text.split('\n').filter((l) => !/^\s*(\/\/|\/\*\*|\*|\*\/|$)/.test(l)).length;

  it('adapters never import each other, and each has at most 100 lines of code (comments and blank lines aside)', () => {
    const adapters = [...g.keys()].filter((f) => f.startsWith('adapters/'));
    expect(adapters.length).toBeGreaterThanOrEqual(2);
    for (const f of adapters) {
      expect(g.get(f)!.filter((d) => d.startsWith('adapters/')), f).toEqual([]);
      expect(codeLines(readFileSync(join(ROOT, f), 'utf8')), f).toBeLessThanOrEqual(100);
    }
  });
});
