// `koa2` is an npm alias of koa@2 (devDependency) so both majors are tested side by side; its
// public API used in the tests is the one @types/koa describes. polka 0.5 ships no types.
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
declare module 'polka' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  interface Polka {
    use(...handlers: Array<(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void>): Polka;
    handler(req: IncomingMessage, res: ServerResponse): void;
  }
  export default function polka(): Polka;
}
// ejs 7 ships no types; the tests hand it to @fastify/view as an engine object only.
declare module 'ejs' {
  const ejs: Record<string, unknown>;
  export default ejs;
}
// mssql ships no types (@types/mssql lags its 12.x); the tests use a ConnectionPool and a Request.
declare module 'mssql' {
  class ConnectionPool {
    constructor(config: Record<string, unknown>);
    on(event: string, listener: (...args: unknown[]) => void): this;
    request(): Request;
    close(): Promise<void>;
  }
  interface Request {
    query(command: string): Promise<unknown>;
    input(name: string, type: unknown, value: unknown): Request;
    execute(procedure: string): Promise<unknown>;
  }
  const sql: { ConnectionPool: typeof ConnectionPool; Int: unknown };
  export default sql;
}
