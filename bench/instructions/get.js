// The instruction harness's client request (harness.js): the client is in every count, so it is
// kept small and the same for every configuration.
import http from 'node:http';

/** GET / on 127.0.0.1:`port` through `agent`, the body read to its end; resolves its length. */
export function getter(port, agent) {
  return () =>
    new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          let n = 0;
          res.on('data', (d) => (n += d.length));
          res.on('end', () => resolve(n));
        })
        .on('error', reject);
    });
}
