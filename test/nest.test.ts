/**
 * NestJS on both of its HTTP platforms, with the existing adapters as Nest's docs mount any
 * Express middleware or Fastify plugin: `app.use(miniprof())` on @nestjs/platform-express,
 * `app.register(miniprof)` on @nestjs/platform-fastify. Steps in a controller and in a provider it
 * gets injected; the comment and Server-Timing checked on real sockets, and anyone else gets the
 * bytes of the same Nest app without miniprof.
 *
 * Nest's decorators are applied by calling them, as a compiler would: the test transformer does not
 * emit decorator metadata, so the provider is injected with an explicit `Inject(token)`.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Header, Inject, Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { openProfiles } from '../src/core/context.js';
import { step } from '../src/index.js';
import { raw, waitFor, withoutDate } from './helpers/http.js';

const EPOCH = Date.UTC(2026, 10, 29, 12, 0, 0);

class Users {
  find(id: string): Promise<string> {
    return step('provider: find user', async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return `user ${id}`;
    });
  }
}
Injectable()(Users);

class PagesController {
  constructor(private readonly users: Users) {}

  async page(): Promise<string> {
    const name = await step('controller: load', () => this.users.find('42'));
    return `<!doctype html><html><body><h1>${name}</h1></body></html>`;
  }
}
Inject(Users)(PagesController, undefined, 0);
const page = Object.getOwnPropertyDescriptor(PagesController.prototype, 'page')!;
Get('page')(PagesController.prototype, 'page', page);
Header('Content-Type', 'text/html; charset=utf-8')(PagesController.prototype, 'page', page);
Controller()(PagesController);

class AppModule {}
Module({ controllers: [PagesController], providers: [Users] })(AppModule);

const apps: INestApplication[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
});

const options = { isDeveloper: (req: { headers: Record<string, unknown> }) => req.headers['x-dev'] === '1', clock: () => 0, now: () => EPOCH, machine: 'web-1', badge: false };

type Platform = 'express' | 'fastify';

async function start(platform: Platform, profiled: boolean): Promise<number> {
  let app: INestApplication;
  if (platform === 'express') {
    const a = await NestFactory.create<NestExpressApplication>(AppModule, new ExpressAdapter(), { logger: false });
    if (profiled) a.use(expressMiniprof(options));
    app = a;
  } else {
    const a = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), { logger: false });
    if (profiled) await a.register(fastifyMiniprof as never, options);
    app = a;
  }
  apps.push(app);
  await app.listen(0, '127.0.0.1');
  return (app.getHttpServer().address() as AddressInfo).port;
}

describe.each(['express', 'fastify'] as const)('NestJS on @nestjs/platform-%s', (platform) => {
  it('a developer gets the steps of the controller and the provider in the comment and in Server-Timing', async () => {
    const port = await start(platform, true);
    const r = await raw(port, { path: '/page?token=secret', headers: { 'x-dev': '1' } });
    expect(r.status).toBe(200);
    expect(r.headers['server-timing']).toEqual(['controller_load;dur=0.0;desc="controller: load", total;dur=0.0']);
    expect(r.headers['cache-control']).toEqual(['private, no-store']);
    // On Fastify, Nest's route handler is a step of its own (autoSteps), the controller's steps inside.
    const lines =
      platform === 'fastify' ? ['> handler GET /page', '>> controller: load', '>>> provider: find user'] : ['> controller: load', '>> provider: find user'];
    const comment = `<!--\nweb-1 at 2026-11-29T12:00:00.000Z\nPath: GET /page\n GET /page = 0.0ms\n${lines.map((l) => `${l} = 0.0ms\n`).join('')}-->`;
    expect(r.payload.toString()).toBe(`<!doctype html><html><body><h1>user 42</h1>${comment}</body></html>`);
    expect(Number(r.headers['content-length']![0])).toBe(r.payload.byteLength);
  });

  it('anyone else gets the bytes of the same Nest app without miniprof', async () => {
    const base = await start(platform, false);
    const port = await start(platform, true);
    const want = await raw(base, { path: '/page' });
    const got = await raw(port, { path: '/page' });
    expect(got.status).toBe(200);
    expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate(want.bytes).toString('latin1'));
  });
});
