import { findSourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

/** A function as a step's CPU line names it: name, script and line (from 1; 0 unknown). */
export interface Frame {
  fn: string;
  url: string;
  line: number;
}

/** V8's call frame (`Profiler.ProfileNode.callFrame`): line and column from 0. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface Entry {
  originalSource?: string;
  originalLine?: number;
  name?: string;
}

/**
 * The frame as the developer wrote it: through the script's source map when Node has one
 * (`--enable-source-maps`, or `module.setSourceMapsSupport`; `module.findSourceMap` is public and
 * returns nothing otherwise), else V8's own position. A map that fails to answer leaves the
 * position as V8 gave it: naming a frame is never worth a fault.
 */
export function resolveFrame(cf: CallFrame): Frame {
  const fn = cf.functionName === '' ? '(anonymous)' : cf.functionName;
  const line = cf.lineNumber >= 0 ? cf.lineNumber + 1 : 0;
  if (cf.url === '' || cf.lineNumber < 0 || cf.url.startsWith('node:')) return { fn, url: cf.url, line };
  try {
    const map = findSourceMap(cf.url) ?? (cf.url.startsWith('file:') ? findSourceMap(fileURLToPath(cf.url)) : undefined);
    if (map === undefined) return { fn, url: cf.url, line };
    const e = map.findEntry(cf.lineNumber, cf.columnNumber) as Entry;
    if (typeof e.originalSource !== 'string' || typeof e.originalLine !== 'number') return { fn, url: cf.url, line };
    return { fn: cf.functionName === '' && typeof e.name === 'string' ? e.name : fn, url: e.originalSource, line: e.originalLine + 1 };
  } catch {
    return { fn, url: cf.url, line };
  }
}

/**
 * Where a frame is, short enough for a text line: a `file:` URL as a path, relative to the working
 * directory when under it, from `node_modules/` on when in a package.
 */
export function shortPlace(f: Frame, cwd: string): string {
  let path = f.url;
  if (path.startsWith('file://')) {
    try {
      path = fileURLToPath(path);
    } catch {
      // Kept as given.
    }
  }
  const nm = path.lastIndexOf('/node_modules/');
  if (nm !== -1) path = path.slice(nm + 1);
  else if (cwd !== '' && path.startsWith(`${cwd}/`)) path = path.slice(cwd.length + 1);
  if (path === '') return '';
  return f.line > 0 ? `${path}:${f.line}` : path;
}
