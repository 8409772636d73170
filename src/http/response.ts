import { requestPath } from '../analysis/url-mask.js';
import { announceSealed, closeProfile } from '../core/context.js';
import { debug, report } from '../core/errors.js';
import { toText } from '../core/names.js';
import { Profile } from '../core/profile.js';
import type { ProfileJSON } from '../core/types.js';
import { badgeTag } from './badge.js';
import { uncacheable } from './cache.js';
import type { Linked } from '../core/linked.js';
import { monotonic } from '../core/clock.js';
import { renderServerTiming } from '../render/server-timing.js';
import { renderHtmlComment } from '../render/text.js';
import { linkHeaders, saveProfile, type HeaderTarget } from '../results/save.js';
import { CAPTURE_OWNER, captureDone, labelOf, sampled as sampledNow, type OpenCapture } from './capture.js';
import type { HttpConfig } from './config.js';
import { unwatch, watch, type Expiring } from './deadline.js';
import { headerString, injectable, insertionPoint, spliceAt, type Body, type HeaderView } from './inject.js';
import { clearCpuCookie, noteCpu, openCpu, stopCpu, type CpuRequest } from './cpu.js';

const TEXT_ENCODINGS = /^(?:utf-?8|latin1|binary|ascii)$/i;

function byteLength(body: Body, encoding: unknown): number {
  if (typeof body !== 'string') return body.byteLength;
  return Buffer.byteLength(body, typeof encoding === 'string' && Buffer.isEncoding(encoding) ? encoding : 'utf8');
}

/** What a captured request keeps until it closes. */
interface Captured {
  /** Still counted among the capture's open requests. */
  open: boolean;
}

/**
 * The adapter-independent half of one developer request: the profile, the headers written when
 * the head goes out, the comment spliced into a whole HTML body, the seal on close. Every entry
 * point catches its own faults and reports them: the app's response must be what it would have
 * been.
 *
 * A captured request (`capture`, not a developer's) has the same profile, deadline and seal, and
 * no output at all: `headers()` and `body()` only stop the root, so an adapter may call them or
 * not; on close the profile is kept in the store or let go (see captureDone).
 */
export class ProfiledResponse implements Expiring, OpenCapture {
  readonly profile: Profile;
  private readonly cfg: HttpConfig<never>;
  private readonly method: string;
  /** The JSON the outputs were rendered from, so the comment and the header agree. */
  private frozen: ProfileJSON | null = null;
  /** Set for Fastify's `reply.hijack()`: the app writes the raw response itself. */
  hijacked = false;
  /**
   * The status as the head went out, 0 before. Recorded then rather than read at close: on-headers
   * sets `statusCode` at every writeHead call, also a second one that Node refuses, and an app
   * may change `statusCode` after the head is sent; neither changes what the client got.
   */
  private headStatus = 0;
  /** Whose profile this is, for the store; undefined when results are off. */
  private readonly owner: string | undefined;
  /** Set for a captured request: nothing of ours reaches its response. */
  private readonly captured: Captured | null;
  /** The request as the app knows it (what `isDeveloper` was given): for `badge.nonce` and `captureLabel`. */
  private readonly req: unknown;
  /** Set when the request asked for CPU sampling (src/http/cpu.ts). */
  private cpu: CpuRequest | null = null;
  /**
   * What miniprof spent on this response after the app handed it over (placing the comment,
   * rendering, sealing), in µs on the profile's clock: shown as `miniprofMs`, never in a step.
   */
  private selfUs = 0;
  /** @internal Set by watch(). */
  deadlineAt = 0;
  /** @internal When a captured request was sampled, on its profile's clock (capture.ts `maxOpen`). */
  readonly openedAt: number;
  /** @internal Links in the set of responses waiting for their deadline (src/core/linked.ts). */
  prevLink: Linked | null = null;
  /** @internal */
  nextLink: Linked | null = null;

  constructor(cfg: HttpConfig<never>, method: string | undefined, url: string | undefined, owner?: string, captured: Captured | null = null, req?: unknown) {
    this.cfg = cfg;
    this.owner = owner;
    this.captured = captured;
    this.req = req;
    this.method = method ?? 'GET';
    const core = captured === null ? cfg.core : cfg.capture!.core;
    // The path alone (no query string, no absolute-form authority); someone else's with its ids and tokens masked.
    const path = toText(requestPath(url, captured !== null), core.maxNameLength);
    // The one way an HTTP request's profile is made, developer's or captured: whatever hooks
    // profile creation (OpenTelemetry's trace id) sees both.
    this.profile = new Profile(`${this.method} ${path}`, core, { method: this.method, path });
    this.openedAt = this.profile.t0;
    // A response that never ends (server-sent events, a long poll) must not keep its profile,
    // and with it the promise hooks, open forever. The deadline is on real time even when the
    // profile has an injected clock.
    watch(this, cfg.maxDurationMs, cfg.core.clock === monotonic ? this.profile.t0 : performance.now());
  }

  /**
   * A whole body is being handed over: the response is complete as far as the app is concerned,
   * so the root stops here and the outputs are rendered from this moment. Returns the body with
   * the comment, or null to send it untouched.
   */
  body(h: HeaderView, status: number, body: unknown, encoding?: unknown): Body | null {
    let t0 = -1;
    try {
      this.profile.stopRoot();
      if (this.captured !== null) return null;
      t0 = this.profile.nowUs();
      // Stopping the sampler (and keeping its samples) is miniprof's own time, counted from t0.
      stopCpu(this.cpu, this.profile, this.cfg.core.onInternalError);
      this.frozen = this.profile.freeze();
      const badge = this.owner === undefined ? null : (this.cfg.results?.badge ?? null);
      if (!this.cfg.htmlComment && badge === null) return null;
      let mode = injectable(h, status, this.method, body);
      if (mode === null) return null;
      const declared = h.getHeader('content-length');
      if (declared !== undefined && Number(declared) !== byteLength(body as Body, encoding)) {
        debug('no comment: Content-Length %s does not match the body', String(declared));
        return null;
      }
      if (typeof body === 'string' && typeof encoding === 'string') {
        if (!TEXT_ENCODINGS.test(encoding)) {
          debug('no comment: string body in %s encoding', encoding);
          return null;
        }
        if (!/^utf-?8$/i.test(encoding)) mode = 'ascii';
      }
      if (this.tooBig(body as Body, encoding)) return null;
      // The tag is ASCII (a UUID, the checked base path, a base64 nonce): right in any mode.
      const tag = badge === null ? '' : badgeTag(badge, this.profile.id, this.req, h, this.cfg.core.onInternalError);
      if (!this.cfg.htmlComment && tag === '') return null;
      const at = insertionPoint(body as Body);
      if (at === -1) return null;
      // The comment shows what was spent up to its own rendering; the header and the JSON, later, all of it.
      this.stamp(t0);
      const comment = this.cfg.htmlComment ? renderHtmlComment(this.frozen, { ascii: mode === 'ascii' }) : '';
      return comment === '' && tag === '' ? null : spliceAt(body as Body, at, comment + tag);
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
      return null;
    } finally {
      if (t0 !== -1) this.stamp(t0, true);
    }
  }

  /**
   * Count the time since `t0` into `miniprofMs` of the outputs' JSON (`done`: for good, once the
   * body is finished with; else only as far as now, for the comment about to be rendered).
   */
  private stamp(t0: number, done = false): void {
    const us = this.selfUs + Math.max(0, this.profile.nowUs() - t0);
    if (done) this.selfUs = us;
    if (this.frozen !== null && us > 0) this.frozen.miniprofMs = us / 1000;
  }

  /** Above `htmlComment.maxBytes`: no comment, no badge; said in debug and in the profile. */
  private tooBig(body: Body, encoding: unknown): boolean {
    const max = this.cfg.htmlMaxBytes;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: most pages are not measured at all.
    if (typeof body === 'string' ? body.length * 3 <= max : body.byteLength <= max) return false;
    const size = byteLength(body, encoding);
    if (size <= max) return false;
    debug('no comment: the page is %d bytes, above htmlComment.maxBytes (%d)', size, max);
    this.profile.warn(`page of ${sizeText(size)}: no comment above ${sizeText(max)} (htmlComment.maxBytes)`);
    return true;
  }

  /** As the head goes out with `status`: cache safety, the id and link, and `Server-Timing`. */
  headers(h: HeaderTarget, status: unknown): void {
    this.headStatus = Number(status) | 0;
    if (this.hijacked) return;
    if (this.captured !== null) return this.profile.stopRoot();
    try {
      stopCpu(this.cpu, this.profile, this.cfg.core.onInternalError);
      clearCpuCookie(this.cpu, h);
      uncacheable(h);
      if (this.owner !== undefined && this.cfg.results !== null) linkHeaders(h, this.cfg.results.basePath, this.profile.id);
      const st = this.cfg.serverTiming;
      if (st === null) return;
      if (!st.crossOrigin && allowsAnyOrigin(h.getHeader('timing-allow-origin'))) {
        debug('no Server-Timing: Timing-Allow-Origin is *');
        return;
      }
      const t0 = this.profile.nowUs();
      appendServerTiming(h, this.serverTimingValue(st.maxBytes));
      this.selfUs += Math.max(0, this.profile.nowUs() - t0);
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
    }
  }

  /** The `Server-Timing` value, from the same JSON as the comment when a whole body was seen. */
  private serverTimingValue(maxBytes: number): string {
    // With the badge, the profile's id too: the page finds the profile of each of its fetch calls
    // in PerformanceResourceTiming.serverTiming, without patching fetch.
    const id = this.owner !== undefined && this.cfg.results !== null && this.cfg.results.badge !== null;
    return renderServerTiming(this.frozen ?? this.profile.data(), { maxBytes, id });
  }

  /**
   * The response closed: record its status (`status`, the response's own, counts only when no
   * head went out through our hook) and whether it was finished or aborted, seal once, save. A
   * second call finds the profile sealed.
   */
  close(status: number, finished: boolean): void {
    try {
      const req = this.profile.request!;
      req.status = this.headStatus !== 0 ? this.headStatus : status;
      if (!finished) req.aborted = true;
      unwatch(this);
      stopCpu(this.cpu, this.profile, this.cfg.core.onInternalError);
      // Sealed (and saved) by maxDurationMs already: the JSON is final, and saving it again would
      // only move it in the developer's list.
      if (this.profile.sealed) return;
      const t0 = this.profile.nowUs();
      closeProfile(this.profile, this.captured === null);
      this.save(t0);
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
    } finally {
      this.release();
    }
  }

  /** @internal The request's CPU sampling, started before the profile opened (see openProfile). */
  withCpu(r: CpuRequest | null): this {
    this.cpu = r;
    noteCpu(r, this.profile);
    return this;
  }

  /** A captured request no longer counts as open (once, even when its close failed). */
  private release(): void {
    const c = this.captured;
    if (c === null || !c.open) return;
    c.open = false;
    this.cfg.capture!.live.delete(this);
  }

  /** maxDurationMs passed with the response still open (SSE, a long poll): seal and save it now. */
  expire(): void {
    this.sealOpen('sealed after maxDurationMs while the response was still open');
  }

  /** A captured request open for slowerThanMs makes room for a newer one (capture.ts `maxOpen`). */
  evict(): void {
    unwatch(this);
    this.sealOpen('sealed early: capture.maxOpen sampled requests were open when another was sampled');
  }

  private sealOpen(warning: string): void {
    try {
      if (this.profile.sealed) return;
      stopCpu(this.cpu, this.profile, this.cfg.core.onInternalError);
      this.profile.warn(warning);
      closeProfile(this.profile, this.captured === null);
      // Saved now, not at close: a stream may never close, and its profile is final anyway.
      this.save(this.profile.nowUs());
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
    } finally {
      this.release();
    }
  }

  private save(t0: number): void {
    const r = this.cfg.results;
    if (r === null || this.owner === undefined) return;
    if (this.captured !== null) return this.keep();
    const json = this.profile.data();
    let bound = this.profile.jsonBound();
    const us = this.selfUs + Math.max(0, this.profile.nowUs() - t0);
    if (us > 0) {
      // Set on the sealed JSON just before the store takes it: `,"miniprofMs":` and a number.
      json.miniprofMs = us / 1000;
      if (bound !== -1) bound += 40;
    }
    saveProfile(r.store, this.owner, json, this.cfg.core.onInternalError, bound, r.keepNotFound);
  }

  /** A captured request is kept only when it was slow or failed; otherwise it is let go now. */
  private keep(): void {
    const c = this.cfg.capture!;
    const json = this.profile.data();
    // Not kept: let go here, and not exported either (a trace of it would be kept nowhere else).
    if (!captureDone(c, json)) return;
    announceSealed(this.profile);
    let bound = this.profile.jsonBound();
    const label = labelOf(c, this.req);
    if (label !== undefined && json.request !== undefined) {
      // Asked for only now, of the kept ones: the app's middleware has run (a session's user is
      // known), and a dropped request never calls it. Each UTF-16 unit is at most 6 bytes of JSON.
      json.request.label = label;
      if (bound !== -1) bound += 12 + 6 * label.length;
    }
    // Kept by the capture's own rule (slow or failed), counted in the minute's budget: the rule
    // that leaves out a developer's bare 404s (results.keepNotFound) must not drop it after that.
    saveProfile(this.cfg.results!.store, CAPTURE_OWNER, json, c.core.onInternalError, bound, true);
  }
}

/** `2.3 MB`, `512 KB`, `900 bytes` (binary multiples, as `maxBytes` is usually given). */
function sizeText(bytes: number): string {
  const one = (x: number): string => String(Math.round(x * 10) / 10);
  if (bytes >= 1 << 20) return `${one(bytes / (1 << 20))} MB`;
  return bytes >= 1024 ? `${one(bytes / 1024)} KB` : `${bytes} bytes`;
}

/** Appended, never replacing a `Server-Timing` the app set (a string or a list). */
function appendServerTiming(h: HeaderTarget, value: string): void {
  const prev = h.getHeader('server-timing');
  if (prev === undefined) h.setHeader('Server-Timing', value);
  else if (Array.isArray(prev)) h.setHeader('Server-Timing', [...prev, value]);
  else h.setHeader('Server-Timing', `${String(prev)}, ${value}`);
}

/** `Timing-Allow-Origin` is a list (and may be set as an array): `*` anywhere in it opens it to all. */
function allowsAnyOrigin(v: unknown): boolean {
  return v !== undefined && headerString(v).split(',').some((o) => o.trim() === '*');
}

/** Conditional headers would let the framework answer 304 with an old, unprofiled page. */
export function stripConditionals(headers: Record<string, unknown>): void {
  delete headers['if-none-match'];
  delete headers['if-modified-since'];
}

/**
 * Open a profile for a request that is not a developer's, when capture is on and the dice say so;
 * null nearly always. Nothing of the request changes (its conditional headers stay: a 304 is as
 * right for it as without us). The adapter then seals it on close (`sealOnClose`) and runs the
 * app in it (`runInProfile`), and installs no wrapper on the response.
 */
export function openCapture(cfg: HttpConfig<never>, method: string | undefined, url: string | undefined, req: unknown): ProfiledResponse | null {
  const c = cfg.capture;
  if (c === null || !sampledNow(c)) return null;
  try {
    const p = new ProfiledResponse(cfg, method, url, CAPTURE_OWNER, { open: true }, req);
    c.live.add(p);
    return p;
  } catch (err) {
    report(cfg.core.onInternalError, err);
    return null;
  }
}

/**
 * Open a developer request's profile, or null when setting up failed (the fault is reported and
 * the request goes on unprofiled: setting up is the profiler's business, not the app's). `req` is
 * the request as the app knows it (what `isDeveloper` was given), for `badge.nonce`.
 */
export function openProfile(cfg: HttpConfig<never>, method: string | undefined, url: string | undefined, owner: string, headers: Record<string, unknown>, req: unknown): ProfiledResponse | null {
  // Sampling starts before the profile opens: starting V8's profiler is not the app's time.
  const cpu = openCpu(headers, cfg.core.clock, cfg.core.onInternalError);
  try {
    const p = new ProfiledResponse(cfg, method, url, owner, null, req).withCpu(cpu);
    stripConditionals(headers);
    return p;
  } catch (err) {
    report(cfg.core.onInternalError, err);
    // The request goes on unprofiled: its sampling must not hold the one slot.
    if (cpu?.sampling != null) {
      try {
        cpu.sampling.stop();
      } catch (e) {
        report(cfg.core.onInternalError, e);
      }
    }
    return null;
  }
}
