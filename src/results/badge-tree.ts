/**
 * The badge's tree (part of the script in badge-client.ts, inside its IIFE, so it uses that file's
 * `el`, `chip` and `ms`): the rows as the results page draws them (src/results/timeline.ts). Runs
 * of two or more siblings with one fold key (steps of one name; custom timings of one similar
 * group) are one row, `12 × select … where author_id = ?`, with their wall time (the union of
 * their intervals: a fold never reads longer than its parent) and a `summed` chip only when the
 * sum differs; a click shows the members. Plumbing rows (category `connect`, see
 * src/analysis/plumbing.ts) between members stay inside the fold and never end it. A step's
 * chips state its N+1 and one verdict on concurrency, as the text does (src/render/marks.ts).
 * Commands wrap rather than vanish at 420 px (the CSS in badge-client.ts).
 */
export const BADGE_TREE_JS = String.raw`
  function walk(table, t, depth, scale, p) {
    var f = [];
    if (t.error) f.push('error');
    if (t.blocking) f.push('blocking');
    if (t.nPlusOne) f.push('N+1 \u00d7' + t.nPlusOne.count);
    if (t.serialized) f.push('serialized');
    else if (t.concurrency) f.push('\u00d7' + Number(t.concurrency).toFixed(1) + ' at once');
    else if (t.parallelism) f.push('parallel \u00d7' + t.parallelism);
    row(table, 's' + (t.error ? ' err' : ''), depth, null, t.name, t, scale, f);
    var inside = (t.custom || []).map(function (c) { return { c: c, at: c.startMs }; })
      .concat((t.children || []).map(function (s) { return { s: s, at: s.startMs }; }));
    inside.sort(function (x, y) { return x.at - y.at; });
    if (inside.length > 400) inside.length = 400;
    for (var i = 0; i < inside.length;) {
      var heads = run(inside, i);
      var end = heads[heads.length - 1] + 1;
      if (heads.length < 2) one(table, inside[i], depth + 1, scale, p);
      else fold(table, inside, i, end, heads, depth + 1, scale, p);
      i = end;
    }
  }

  function one(table, x, depth, scale, p) {
    if (x.s) return walk(table, x.s, depth, scale, p);
    var c = x.c;
    var cf = [];
    if (c.error) cf.push('error');
    if (c.duplicate) cf.push('duplicate');
    if (c.similar !== undefined) cf.push('similar #' + c.similar);
    row(table, 'c' + (c.error ? ' err' : ''), depth, c.category, c.command, c, scale, cf);
  }

  function key(x) {
    if (x.s) return 's' + x.s.name;
    return x.c.similar !== undefined ? 'c' + x.c.similar + '\u0000' + x.c.category : '';
  }

  function plumbing(x) {
    return !!x.c && x.c.category === 'connect';
  }

  // The indexes of the members of the run that starts at i (just i when there is none).
  function run(inside, i) {
    var k = key(inside[i]);
    var heads = [i];
    if (!k) return heads;
    for (var j = i + 1; ; j++) {
      while (j < inside.length && plumbing(inside[j])) j++;
      if (j >= inside.length || key(inside[j]) !== k) return heads;
      heads.push(j);
    }
  }

  function fold(table, inside, from, end, heads, depth, scale, p) {
    var first = inside[heads[0]];
    var name = first.s ? first.s.name : first.c.command;
    var g = first.c && (p.similar || []).filter(function (x) { return x.id === first.c.similar; })[0];
    if (g) name = g.command;
    var spans = heads.map(function (h) { var t = inside[h].s || inside[h].c; return [Number(t.startMs), Number(t.startMs) + Number(t.durationMs)]; });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var wall = 0, sum = 0, lo = spans[0][0], hi = -Infinity;
    spans.forEach(function (s) {
      sum += s[1] - s[0];
      if (s[0] > hi) wall += s[1] - s[0];
      else if (s[1] > hi) wall += s[1] - hi;
      hi = Math.max(hi, s[1]);
    });
    var f = Math.abs(sum - wall) >= 0.05 ? [ms(sum) + ' summed'] : [];
    var tr = row(table, 'fold' + (first.s ? ' s' : ' c'), depth, first.c ? first.c.category : null, heads.length + ' \u00d7 ' + name, { startMs: lo, durationMs: wall }, scale, f);
    var b = el('button', 'fx', '\u25b8');
    b.type = 'button';
    b.setAttribute('aria-expanded', 'false');
    b.setAttribute('aria-label', 'show the ' + heads.length);
    tr.firstChild.firstChild.insertBefore(b, tr.firstChild.firstChild.firstChild);
    var at = table.rows.length;
    for (var i = from; i < end; i++) one(table, inside[i], depth, scale, p);
    var members = [].slice.call(table.rows, at);
    members.forEach(function (m) { m.hidden = true; });
    b.addEventListener('click', function () {
      var open = b.getAttribute('aria-expanded') !== 'true';
      b.setAttribute('aria-expanded', String(open));
      b.textContent = open ? '\u25be' : '\u25b8';
      members.forEach(function (m) { m.hidden = !open; });
    });
  }

  function row(table, cls, depth, cat, text, t, scale, f) {
    var tr = table.appendChild(el('tr', cls));
    var name = tr.appendChild(el('td', 'name'));
    name.style.paddingLeft = 4 + Math.min(depth, 16) * 12 + 'px';
    name.title = (cat ? '[' + cat + '] ' : '') + text;
    var nm = name.appendChild(el('div', 'nm'));
    if (cat) nm.appendChild(el('span', 'cat', cat));
    nm.appendChild(el('span', 'tx', text));
    f.forEach(function (x) { nm.appendChild(chip(x)); });
    tr.appendChild(el('td', 'ms', ms(t.durationMs)));
    var bar = tr.appendChild(el('td', 'bar')).appendChild(el('i'));
    bar.style.left = Math.min(100, Number(t.startMs) * scale) + '%';
    bar.style.width = Math.min(100, Number(t.durationMs) * scale) + '%';
    return tr;
  }
`;
