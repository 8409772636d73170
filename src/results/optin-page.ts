import { escapeHtml } from './html.js';
import { PAGE_HEADERS } from './pages.js';

/**
 * The headers of the opt-in and opt-out form pages: those of every results page, but the form may
 * post to this origin (`form-action 'self'`, where the other pages have `'none'`).
 */
export const FORM_HEADERS = {
  ...PAGE_HEADERS,
  'Content-Security-Policy': PAGE_HEADERS['Content-Security-Policy'].replace("form-action 'none'", "form-action 'self'"),
};

/**
 * A small page with one button that POSTs to `<base>/opt-in` or `<base>/opt-out`: a state change
 * is never made by a GET (a link or an image from another site could make one), and the POST is
 * checked for its origin. No script, no inline style (the pages' CSP).
 */
export function renderOptInPage(base: string, action: 'opt-in' | 'opt-out', optedIn: boolean, secure: boolean): string {
  const b = escapeHtml(base);
  const what =
    action === 'opt-in'
      ? `<p>${optedIn ? 'You are opted in on this browser.' : 'Opt in to have this browser’s requests profiled, wherever the app would not profile them.'}</p>` +
        (secure ? '' : '<p>This origin is plain HTTP: the cookie cannot be <code>Secure</code> or <code>__Host-</code> here.</p>')
      : `<p>${optedIn ? 'Opt out: this browser’s opt-in stops working at once, everywhere.' : 'This browser is not opted in.'}</p>`;
  return (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>miniprof: ${action}</title>` +
    `<link rel="stylesheet" href="${b}/miniprof.css">` +
    `</head><body><nav><a href="${b}/">miniprof</a></nav><h1>${action === 'opt-in' ? 'Opt in' : 'Opt out'}</h1>${what}` +
    `<form method="post" action="${b}/${action}"><button type="submit">${action === 'opt-in' ? 'Opt in' : 'Opt out'}</button></form>` +
    '</body></html>\n'
  );
}
