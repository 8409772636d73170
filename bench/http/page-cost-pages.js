// The pages of bench/http/page-cost.js (issue 58).

/** ~3 KB of a realistic page: a table row block with links, an inline SVG icon, a form, a script. */
const block = (i) =>
  `<section class="card" id="c${i}"><h2>Order #${i} <svg class="icon" viewBox="0 0 24 24" aria-hidden="true"><title>order</title><path d="M3 3h18v18H3z"/></svg></h2>` +
  `<table class="lines"><thead><tr><th>Item</th><th>Qty</th><th>Price</th></tr></thead><tbody>` +
  Array.from({ length: 12 }, (_, j) => `<tr data-id="${i}-${j}"><td><a href="/items/${j}?ref=order&amp;o=${i}">Item ${j} &mdash; a longer product name</a></td><td>${j + 1}</td><td>$${(j * 3.7).toFixed(2)}</td></tr>`).join('') +
  `</tbody></table><form method="post" action="/orders/${i}"><label>Status <select name="s"><option>open</option><option selected>paid</option><option>shipped</option></select></label>` +
  `<textarea name="note" rows="2">Customer wrote: "leave at the door" &lt;3</textarea><button type="submit">Save</button></form>` +
  `<script>window.orders = window.orders || []; window.orders.push({ id: ${i}, html: "<b>#${i}<\\/b>" });</script></section>\n`;

const realistic =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Orders</title><link rel="stylesheet" href="/app.css">' +
  '<style>.card{border:1px solid #ccc}.lines td{padding:2px}</style><script src="/app.js" defer></script></head><body><nav><a href="/">Home</a> <a href="/orders">Orders</a></nav><main>' +
  Array.from({ length: 130 }, (_, i) => block(i)).join('') +
  '</main><footer><p>&copy; Example</p></footer></body></html>';

/** The review's messy megabyte: user content with misnested tags. */
const messy = `<!doctype html><html><body>${'<p><b>x</p>'.repeat(90000)}</body></html>`;

/** 20 MB of ordinary tags: above the default bound (1 MiB), so it must come back promptly and untouched. */
const huge = `<!doctype html><html><body>${'<div class="row"><span>cell</span> <a href="/x">link</a></div>\n'.repeat(320000)}</body></html>`;

export const PAGES = { realistic, messy, huge };
