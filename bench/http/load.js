// The load generator, a long-lived child of bench/run.js (pinned to its own core): each IPC
// message {url, seconds, connections} runs one autocannon slice and answers with its numbers.
import autocannon from 'autocannon';

process.on('message', async (msg) => {
  if (msg?.cmd === 'exit') process.exit(0);
  const r = await autocannon({ url: msg.url, connections: msg.connections, duration: msg.seconds, pipelining: 1 });
  process.send({
    rps: r.requests.total / (r.duration > 0 ? r.duration : msg.seconds),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  });
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
