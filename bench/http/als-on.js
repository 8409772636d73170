// `node --import ./bench/http/als-on.js …`: switch Node <= 22's promise hooks on for the whole
// process, as a first profile would, with nothing else of miniprof (bench/http/decompose.js).
import { AsyncLocalStorage } from 'node:async_hooks';

new AsyncLocalStorage().run({}, () => {});
