// `node --import ./bench/http/als-store.js …`: every request runs with a store in an
// AsyncLocalStorage (entered as the server emits 'request'), and nothing else of miniprof. On
// Node <= 22 the promise hooks then copy that store onto every async resource the request makes,
// which is what an open profile costs before miniprof does anything (bench/http/decompose.js).
import { AsyncLocalStorage } from 'node:async_hooks';
import { Server } from 'node:http';

const als = new AsyncLocalStorage();
const emit = Server.prototype.emit;
Server.prototype.emit = function (event, ...args) {
  return event === 'request' ? als.run({ request: args[0] }, () => emit.call(this, event, ...args)) : emit.call(this, event, ...args);
};
