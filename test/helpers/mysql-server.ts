import { createRequire } from 'node:module';
import type { AddressInfo, Server } from 'node:net';

/** A connection of mysql2's own server, as its `query` handler gets it. */
export interface MysqlServerConnection {
  writeOk(): void;
  writeError(e: { code: number; message: string }): void;
}

/**
 * mysql2's own server protocol on 127.0.0.1, a free port (no MySQL needed): it handshakes every
 * connection, then `onQuery` answers each query. It answers no prepared statement: `execute`
 * fails with a real round trip. mysql2 is loaded at the call, not before: a file that registers
 * OpenTelemetry's mysql2 instrumentation must do so before mysql2 is first loaded.
 */
export async function startMysqlServer(onQuery: (conn: MysqlServerConnection, sql: string) => void): Promise<{ port: number; close(): Promise<void> }> {
  const mysql = createRequire(import.meta.url)('mysql2') as typeof import('mysql2');
  const server = mysql.createServer((conn) => {
    conn.serverHandshake({ protocolVersion: 10, serverVersion: '8.0.0-miniprof-test', connectionId: 1, statusFlags: 2, characterSet: 8, capabilityFlags: 0xffffff } as never);
    conn.on('query', (sql: string) => onQuery(conn as unknown as MysqlServerConnection, sql));
    conn.on('error', () => {});
  });
  // mysql2's Server passes listen()'s arguments to its net.Server, which it keeps as `_server`
  // with no accessor: the only way to learn the free port it was given.
  const net = (server as unknown as { _server: Server })._server;
  await new Promise<void>((r) => net.listen(0, '127.0.0.1', r));
  return { port: (net.address() as AddressInfo).port, close: () => new Promise<void>((r) => net.close(() => r())) };
}
