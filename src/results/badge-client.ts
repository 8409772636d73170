/**
 * The in-page badge, as the browser gets it from `<basePath>/badge.js`: one classic script, no
 * framework, no global (an IIFE), everything inside a shadow root so the page's CSS and the
 * badge's cannot reach each other.
 *
 * Kept as the exact text that is served (String.raw: no template literals or `${` inside), so
 * what the tests load in Chromium is byte for byte what apps serve. Under a Content-Security-Policy
 * it needs only `script-src` for its own URL: styles are a constructable stylesheet
 * (`adoptedStyleSheets`, not governed by `style-src`), and positions and bar widths are set
 * through the CSSOM (`el.style.x = …`), which CSP allows; no `style="…"` attribute is ever parsed.
 * Every string read from a profile reaches the page through `textContent` only.
 *
 * Ids: the page's own comes from the tag's `data-id` (or the navigation entry's Server-Timing);
 * each later `fetch`/XHR that was profiled carries `miniprof;desc="<id>"` in its Server-Timing,
 * read from a PerformanceObserver: nothing of the page's (`fetch`, `XMLHttpRequest`) is patched.
 * Server-Timing of other origins is hidden by the browser without Timing-Allow-Origin, which
 * miniprof never sets: only same-origin calls are listed, as only their profiles are readable.
 */
import { BADGE_TREE_JS } from './badge-tree.js';

export const BADGE_JS = String.raw`/* miniprof badge */
(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || !window.fetch || !document.documentElement.attachShadow) return;
  var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  var POSITIONS = ['bottom-right', 'bottom-left', 'top-right', 'top-left'];
  var base = new URL(script.src, location.href).pathname.replace(/\/badge\.js$/, '');
  var pos = script.getAttribute('data-position');
  if (POSITIONS.indexOf(pos) < 0) pos = 'bottom-right';

  var CSS = [
    ':host{all:initial!important;position:fixed!important;z-index:2147483647!important;display:block!important;max-width:calc(100vw - 24px)!important}',
    ':host([data-position^=bottom]){bottom:12px!important}:host([data-position^=top]){top:12px!important}',
    ':host([data-position$=right]){right:12px!important}:host([data-position$=left]){left:12px!important}',
    '.wrap{display:flex;flex-direction:column;gap:6px;font:12px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;font-variant-numeric:tabular-nums}',
    ':host([data-position^=bottom]) .wrap{flex-direction:column-reverse}',
    ':host([data-position$=right]) .wrap{align-items:flex-end}:host([data-position$=left]) .wrap{align-items:flex-start}',
    '[hidden]{display:none!important}',
    'button{font:inherit;color:inherit;cursor:pointer}',
    'button:focus-visible,a:focus-visible{outline:2px solid #0969da;outline-offset:1px}',
    '.badge{display:flex;align-items:center;gap:6px;padding:4px 9px;background:#fff;border:1px solid #d0d7de;border-left:3px solid #1a7f37;border-radius:6px;box-shadow:0 1px 4px rgba(31,35,40,.18)}',
    '.badge.warn{border-left-color:#bf8700}.badge.bad{border-left-color:#cf222e}',
    '.badge .t{font-weight:600}.badge .n{color:#57606a}',
    '.panel{background:#fff;border:1px solid #d0d7de;border-radius:8px;box-shadow:0 8px 24px rgba(31,35,40,.2);width:600px;max-width:calc(100vw - 24px);max-height:min(70vh,640px);display:flex;flex-direction:column;overflow:hidden}',
    'header{display:flex;align-items:center;gap:8px;padding:6px 10px;border-bottom:1px solid #eaeef2;background:#f6f8fa}',
    'header strong{font-size:12px;letter-spacing:.02em}header .sub{color:#57606a;flex:1}',
    '.x{border:0;background:none;font-size:16px;line-height:1;padding:0 4px;color:#57606a;border-radius:4px}.x:hover{background:#eaeef2}',
    'ol{list-style:none;margin:0;padding:4px;border-bottom:1px solid #eaeef2;max-height:132px;overflow:auto;flex:none}',
    '.row{display:flex;align-items:center;gap:6px;width:100%;border:0;background:none;text-align:left;padding:3px 6px;border-radius:4px}',
    '.row:hover{background:#f6f8fa}.row[aria-current=true]{background:#ddf4ff}',
    '.meth{font:600 10px/1.6 ui-monospace,SFMono-Regular,Menlo,monospace;color:#57606a;min-width:34px}',
    '.path{flex:1;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.dur{color:#57606a;white-space:nowrap}',
    '.detail{overflow:auto;padding:6px 10px 10px}',
    '.facts{display:flex;flex-wrap:wrap;gap:4px 12px;align-items:baseline;color:#57606a;margin:2px 0 6px}.facts b{color:#1f2328;font-weight:600}',
    '.facts a{margin-left:auto;color:#0969da;text-decoration:none}.facts a:hover{text-decoration:underline}',
    'table{border-collapse:collapse;width:100%;table-layout:fixed}',
    'td{padding:2px 4px;border-bottom:1px solid #f0f2f4;vertical-align:middle;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}',
    'td.ms{width:64px;text-align:right}td.bar{width:96px}',
    'td.bar i{display:block;position:relative;height:6px;background:#54aeff;border-radius:2px;min-width:1px}tr.c td.bar i{background:#c297ff}',
    'tr.c td.name{color:#57606a;font:11px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}',
    '.nm{display:flex;align-items:center;min-width:0}.tx{overflow:hidden;text-overflow:ellipsis;min-width:0}.nm .f,.cat{flex:none}',
    '.cat{color:#8250df;margin-right:6px}tr.err td{color:#a40e26}',
    '.f{display:inline-block;font-size:10px;line-height:15px;padding:0 5px;border-radius:8px;background:#eaeef2;color:#57606a;margin-left:4px;font-family:system-ui,sans-serif;vertical-align:1px}',
    '.f.blocking{background:#fff8c5;color:#7d4e00}.f.n1,.f.duplicate,.f.similar,.f.serialized{background:#fff1e5;color:#953800}.f.error{background:#ffebe9;color:#a40e26}',
    '.msg{color:#57606a;padding:8px 0}',
    'tr.c td.name{white-space:normal}.nm{flex-wrap:wrap}tr.c .tx{overflow-wrap:anywhere;display:-webkit-box;-webkit-line-clamp:3;-webkit-box-orient:vertical}',
    '.fx{border:0;background:none;padding:0 4px 0 0;color:#0969da}tr.fold td.name{font-weight:600}',
    '@media (max-width:520px){td.bar{display:none}}',
    '.cpu{border:1px solid #d0d7de;background:#fff;border-radius:4px;font-size:11px}'
  ].join('\n');

  // The page's profile first, then each profiled fetch/XHR as seen.
  var entries = [];
  var byId = {};
  var selected = null;
  var isOpen = false;

  var host = document.createElement('miniprof-badge');
  host.setAttribute('data-position', pos);
  var root = host.attachShadow({ mode: 'open' });
  if ('adoptedStyleSheets' in Document.prototype && typeof CSSStyleSheet === 'function') {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } else {
    // No constructable stylesheets (Safari < 16.4): needs style-src to allow it.
    root.appendChild(el('style', null, CSS));
  }

  var wrap = root.appendChild(el('div', 'wrap'));
  var button = wrap.appendChild(el('button', 'badge'));
  button.type = 'button';
  button.setAttribute('aria-expanded', 'false');
  button.setAttribute('aria-controls', 'miniprof-panel');
  var total = button.appendChild(el('span', 't', '…'));
  var marks = button.appendChild(el('span', 'm'));
  var more = button.appendChild(el('span', 'n'));

  var panel = wrap.appendChild(el('section', 'panel'));
  panel.id = 'miniprof-panel';
  panel.hidden = true;
  panel.setAttribute('role', 'dialog');
  panel.setAttribute('aria-label', 'miniprof profiles');
  var head = panel.appendChild(el('header'));
  head.appendChild(el('strong', null, 'miniprof'));
  var count = head.appendChild(el('span', 'sub'));
  cpuButton(head);
  var close = head.appendChild(el('button', 'x', '\u00d7'));
  close.type = 'button';
  close.setAttribute('aria-label', 'Close');
  var list = panel.appendChild(el('ol'));
  var detail = panel.appendChild(el('div', 'detail'));

  button.addEventListener('click', function () { if (isOpen) hide(true); else show(); });
  close.addEventListener('click', function () { hide(true); });
  root.addEventListener('keydown', function (e) {
    if (e.key === 'Escape' && isOpen) {
      e.stopPropagation();
      hide(true);
    }
  });
  document.addEventListener('pointerdown', function (e) {
    if (isOpen && e.composedPath().indexOf(host) < 0) hide(false);
  });

  (document.body || document.documentElement).appendChild(host);

  var nav = performance.getEntriesByType ? performance.getEntriesByType('navigation')[0] : null;
  var pageId = script.getAttribute('data-id');
  if (!UUID.test(pageId || '')) pageId = idOf(nav);
  if (pageId) {
    var navTotal = totalOf(nav);
    add(pageId, 'GET', location.pathname, navTotal);
  }
  if (typeof PerformanceObserver === 'function') {
    try {
      new PerformanceObserver(function (l) { l.getEntries().forEach(onResource); }).observe({ type: 'resource', buffered: true });
    } catch (err) { /* no resource timing: only the page itself is listed */ }
  }
  render();

  function onResource(r) {
    if (r.initiatorType !== 'fetch' && r.initiatorType !== 'xmlhttprequest') return;
    var id = idOf(r);
    if (id && !byId[id]) add(id, '', new URL(r.name).pathname, totalOf(r));
  }

  function idOf(t) {
    var st = (t && t.serverTiming) || [];
    for (var i = 0; i < st.length; i++) if (st[i].name === 'miniprof' && UUID.test(st[i].description)) return st[i].description.toLowerCase();
    return null;
  }

  function totalOf(t) {
    var st = (t && t.serverTiming) || [];
    for (var i = 0; i < st.length; i++) if (st[i].name === 'total') return st[i].duration;
    return null;
  }

  function add(id, method, path, ms) {
    var e = { id: id, method: method, path: path, ms: ms, json: null, failed: false, row: null };
    entries.push(e);
    byId[id] = e;
    // A polling page: keep the page and its last 50 calls.
    if (entries.length > 51) entries.splice(1, 1);
    if (selected === null) selected = e;
    load(e, 0);
    render();
  }

  // Saved when its response closed: a store slower than the page is retried.
  function load(e, attempt) {
    fetch(base + '/' + e.id + '.json', { credentials: 'same-origin', headers: { accept: 'application/json' } }).then(function (res) {
      if (res.ok) return res.json();
      if (res.status === 404 && attempt < 3) {
        setTimeout(function () { load(e, attempt + 1); }, 200 * Math.pow(3, attempt));
        return undefined;
      }
      throw new Error(String(res.status));
    }).then(function (json) {
      if (json === undefined) return;
      e.json = json;
      var req = json.request || {};
      if (req.method) e.method = String(req.method);
      if (req.path) e.path = String(req.path);
      e.ms = Number(json.durationMs);
      render();
    }).catch(function () {
      e.failed = true;
      render();
    });
  }

  function show() {
    isOpen = true;
    panel.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    render();
    var cur = selected && selected.row;
    (cur || close).focus();
  }

  function hide(refocus) {
    isOpen = false;
    panel.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    if (refocus) button.focus();
  }

  function render() {
    var page = entries[0];
    total.textContent = page && page.ms !== null ? ms(page.ms) : '\u2026';
    clear(marks);
    var f = page && page.json ? flagsOf(page.json) : [];
    f.forEach(function (x) { marks.appendChild(chip(x)); });
    button.className = 'badge' + (f.indexOf('error') >= 0 ? ' bad' : f.length ? ' warn' : '');
    more.textContent = entries.length > 1 ? '+' + (entries.length - 1) : '';
    button.setAttribute('aria-label', 'miniprof: ' + total.textContent + (f.length ? ', ' + f.join(', ') : '') + (entries.length > 1 ? ', ' + (entries.length - 1) + ' more requests' : ''));
    if (!isOpen) return;
    count.textContent = entries.length + (entries.length === 1 ? ' profile' : ' profiles');
    var focused = root.activeElement;
    var refocus = focused && focused.className === 'row' ? focused.miniprofEntry : null;
    clear(list);
    entries.forEach(function (e) {
      var li = list.appendChild(el('li'));
      var b = li.appendChild(el('button', 'row'));
      b.type = 'button';
      b.miniprofEntry = e;
      b.setAttribute('aria-current', e === selected ? 'true' : 'false');
      b.appendChild(el('span', 'meth', e.method || 'fetch'));
      b.appendChild(el('span', 'path', e.path));
      var fl = b.appendChild(el('span'));
      if (e.json) flagsOf(e.json).forEach(function (x) { fl.appendChild(chip(x)); });
      b.appendChild(el('span', 'dur', e.ms !== null ? ms(e.ms) : '\u2026'));
      b.addEventListener('click', function () {
        selected = e;
        render();
      });
      e.row = b;
      if (refocus === e) b.focus();
    });
    renderDetail(selected);
  }

  // Profile CPU: a one-shot cookie for the next load (cleared by the server; developers only).
  function cpuButton(parent) {
    var b = parent.appendChild(el('button', 'cpu', 'Profile CPU'));
    b.type = 'button';
    b.addEventListener('click', function () {
      document.cookie = 'miniprof-cpu=1;path=/;max-age=60;samesite=strict' + (location.protocol == 'https:' ? ';secure' : '');
      location.reload();
    });
  }

  function renderDetail(e) {
    clear(detail);
    if (!e) return;
    var facts = detail.appendChild(el('div', 'facts'));
    var p = e.json;
    facts.appendChild(el('b', null, (e.method ? e.method + ' ' : '') + e.path));
    if (p && p.request && p.request.status) facts.appendChild(el('span', null, String(p.request.status)));
    if (e.ms !== null) facts.appendChild(el('span', null, ms(e.ms)));
    var a = facts.appendChild(el('a', null, 'Full profile \u2197'));
    a.href = base + '/' + e.id;
    a.target = '_blank';
    a.rel = 'noopener';
    if (!p) {
      detail.appendChild(el('div', 'msg', e.failed ? 'Not available (expired, or another developer\u2019s).' : 'Loading\u2026'));
      return;
    }
    var table = detail.appendChild(el('table'));
    var scale = Number(p.durationMs) > 0 ? 100 / Number(p.durationMs) : 0;
    walk(table, p.root, 0, scale, p);
  }

` + BADGE_TREE_JS + String.raw`
  function flagsOf(p) {
    var out = { error: false, blocking: p.eventLoopDelayMs !== undefined, n1: !!(p.similar && p.similar.length), serialized: false };
    (function visit(t) {
      if (t.error) out.error = true;
      if (t.blocking) out.blocking = true;
      if (t.serialized) out.serialized = true;
      if (t.nPlusOne) out.n1 = true;
      (t.custom || []).forEach(function (c) {
        if (c.error) out.error = true;
        if (c.duplicate || c.similar !== undefined) out.n1 = true;
      });
      (t.children || []).forEach(visit);
    })(p.root);
    if (p.request && p.request.status >= 500) out.error = true;
    var f = [];
    if (out.error) f.push('error');
    if (out.blocking) f.push('blocking');
    if (out.n1) f.push('N+1');
    if (out.serialized) f.push('serialized');
    return f;
  }

  function chip(text) {
    var cls = text.indexOf('N+1') === 0 ? 'n1' : text.split(' ')[0];
    return el('span', 'f ' + cls, text);
  }

  function ms(v) {
    v = Number(v);
    if (!(v > 0)) return '0.0 ms';
    return v < 10000 ? (Math.round(v * 10) / 10).toFixed(1) + ' ms' : (v / 1000).toFixed(1) + ' s';
  }

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = String(text);
    return n;
  }

  function clear(n) {
    while (n.firstChild) n.removeChild(n.firstChild);
  }
})();
`;
