// `node replay.js <response-file> <requests>`: the instruction harness's client (keep-alive
// http.get, one request in flight, the body read to its end) against a raw TCP server that answers
// every request with the same canned bytes. Run under valgrind by client.js: what it counts is the
// client's work for that response, plus a server whose work does not depend on the bytes.
import http from 'node:http';
import { getter } from './get.js';
import net from 'node:net';
import { readFileSync } from 'node:fs';

const [file, count] = process.argv.slice(2);
const canned = readFileSync(file);
const server = net.createServer((socket) => {
  let pending = '';
  socket.on('data', (d) => {
    pending += d.toString('latin1');
    for (let end = pending.indexOf('\r\n\r\n'); end !== -1; end = pending.indexOf('\r\n\r\n')) {
      pending = pending.slice(end + 4);
      socket.write(canned);
    }
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const { port } = server.address();
const get = getter(port, agent);
for (let i = 0; i < Number(count); i++) await get();
agent.destroy();
server.close();
process.exit(0);
