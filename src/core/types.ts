/** The SQL dialects whose masking miniprof knows (src/analysis/normalize.ts). */
export type SqlDialect = 'postgres' | 'mysql' | 'mssql' | 'sqlite';

/** The v1 JSON of a profile (`Profile.toJSON()`): what leaves the process, stable and versioned. */

/** Per category, in the profile's JSON: how many custom timings, how long, how repetitive. */
export interface CategorySummaryJSON {
  category: string;
  count: number;
  /** The timings' durations summed (parallel ones each counted). */
  durationMs: number;
  /**
   * Wall time: how long at least one timing of this category was running (the union of their
   * intervals within the request), never more than the profile's `durationMs`.
   */
  wallMs: number;
  /**
   * Timings whose category, command and values (parameters included) all match another timing's
   * in this profile: the same call made again.
   */
  duplicate: number;
  /** Timings in a group of similar commands (same shape once values are masked). */
  similar: number;
}

/** A group of similar commands (the N+1 pattern): `id` is what each member's `similar` says. */
export interface SimilarGroupJSON {
  id: number;
  category: string;
  /** The shared shape, values masked whatever `redact` says. */
  command: string;
  count: number;
  durationMs: number;
}

/** One custom timing in the v1 JSON. */
export interface CustomTimingJSON {
  category: string;
  command: string;
  startMs: number;
  durationMs: number;
  error?: true;
  unfinished?: true;
  /**
   * Another custom timing of this profile has the same category, the same command and the same
   * values (parameters included): the very same call was made again. A command cut at
   * `maxCommandLength` (ending in `...`) never counts, as its values are not all known.
   */
  duplicate?: true;
  /** The id of this command's group of similar commands (`ProfileJSON.similar`), if it has one. */
  similar?: number;
  /** An OpenTelemetry span covers this call (miniprof/otel): it is in the trace already. */
  traced?: true;
}

/** One step in the v1 JSON. `children` is always present; the rest only when it applies. */
export interface TimingJSON {
  name: string;
  startMs: number;
  durationMs: number;
  children: TimingJSON[];
  custom?: CustomTimingJSON[];
  error?: true;
  unfinished?: true;
  /** For a callback step that returned a promise: how long `fn` ran before it returned. */
  syncMs?: number;
  /**
   * It held the event loop past `blockingMs`: its synchronous start (`syncMs`, or the whole of a
   * synchronous step), or synchronous work later, after an await (`heldMs`).
   */
  blocking?: true;
  /**
   * How long the event loop was held while this step was the innermost step running, beyond its
   * synchronous start (`syncMs`): synchronous work after an `await`. Measured by the event-loop
   * monitor (default clock only), so it may read up to its 10 ms resolution short.
   */
  heldMs?: number;
  /**
   * The stall counted in `heldMs` happened while other steps of this profile (each flagged too)
   * or another profile were also running: any of them may have held the loop.
   */
  blockingAmbiguous?: true;
  /**
   * When two or more children overlapped in time: the sum of their durations over this step's
   * (≈N when N ran in parallel, ≈(N+1)/2 when started together but served one at a time).
   */
  parallelism?: number;
  /**
   * For ≥ 3 children of the same name (or ≥ 3 similar custom timings) started together: how many
   * of them actually ran at once, from 1 (one at a time) to their count (all in parallel).
   */
  concurrency?: number;
  /** `concurrency` is below 1.5: the children started together but ran one at a time. */
  serialized?: true;
  /** Made from an OpenTelemetry span (miniprof/otel): it is in the trace already. */
  traced?: true;
  /**
   * A step miniprof opened for the framework's route handler (`autoSteps`: Fastify's
   * `handler GET /users/:id`). Server-Timing shows the steps inside it in its place.
   */
  handler?: true;
  /** The group `concurrency` was estimated from (the most serialized one, if several). */
  fanOut?: FanOutJSON;
  /**
   * The request was CPU-sampled (`x-miniprof-cpu: 1`) and this step held the CPU (it is
   * `blocking`, or its samples add up to more than `blockingMs`): what ran while it was the
   * innermost step open (src/analysis/cpu-samples.ts).
   */
  cpu?: StepCpuJSON;
  /** Garbage-collection pauses while this blocking step was the innermost step open, in ms (src/analysis/gc.ts). */
  gcMs?: number;
  /**
   * The N+1 this step ran: the largest group of at least three similar custom timings (one shape
   * once values are masked) of which this is the innermost step holding them all.
   */
  nPlusOne?: NPlusOneJSON;
  /**
   * On the root only, when it has child steps: the request's time in no step (its duration less
   * the union of its children's intervals), so the time nobody wrapped has a name.
   */
  selfMs?: number;
}

/** One function of a CPU sample's attribution: where the time went, by self time. */
export interface CpuFunctionJSON {
  /** The function's name (`(anonymous)` when it has none; `(garbage collector)`, `(program)` for V8's own). */
  fn: string;
  /** Its script (a `file://` URL, `node:…`, or empty for V8's own), through a source map when Node has one. */
  url: string;
  /** Its line, from 1 (0: unknown). */
  line: number;
  /** Sampled self time, in ms. */
  ms: number;
}

/** A step's share of the samples (see `TimingJSON.cpu`). */
export interface StepCpuJSON {
  /** Sampled CPU time (idle excluded) while the step was the innermost one open, in ms. */
  ms: number;
  /** Of that, taken while another request was in flight: any of them may have run it. */
  sharedMs?: number;
  /** The functions with the most self time, at most three, most first. */
  top: CpuFunctionJSON[];
}

/** Chrome DevTools' `.cpuprofile` (V8's `Profiler.Profile`), as `/_miniprof/<id>.cpuprofile` serves it. */
export interface CpuProfileJSON {
  nodes: { id: number; callFrame: { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number }; hitCount?: number; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The request was CPU-sampled (`ProfileJSON.cpu`). */
export interface CpuJSON {
  /** The sampling interval asked for, in µs. */
  intervalUs: number;
  /** Sampled CPU time within the request (idle excluded), in ms. */
  ms: number;
  /** Of that, taken while another request was in flight. */
  sharedMs?: number;
  /** The functions with the most self time in the whole request, at most five. */
  top: CpuFunctionJSON[];
  /** The samples, unless larger than the bound (then `note` says so). */
  profile?: CpuProfileJSON;
  note?: string;
}

/** A group of similar custom timings, named on the step that ran them (`TimingJSON.nPlusOne`). */
export interface NPlusOneJSON {
  category: string;
  /** The group's command as its rows show it (`ProfileJSON.similar`'s). */
  command: string;
  count: number;
  /** Its id in `ProfileJSON.similar`. */
  similar: number;
}

/** A group of similar children started together (see `TimingJSON.concurrency`). */
export interface FanOutJSON {
  /** The steps' name; for custom timings, their shared shape (as in `ProfileJSON.similar`). */
  name: string;
  /** How many of them were measured. */
  count: number;
  /** For custom timings only: their category and similar-group id. */
  category?: string;
  similar?: number;
}

/** What an HTTP adapter knows about the request; the path never has a query string. */
export interface RequestInfo {
  method: string;
  path: string;
  status?: number;
  aborted?: true;
  /** A captured request's `captureLabel`, when the app gives one. */
  label?: string;
}

/** `Profile.toJSON()`: stable, versioned by `v`. */
export interface ProfileJSON {
  v: 1;
  id: string;
  name: string;
  machine: string;
  started: string;
  durationMs: number;
  droppedSteps: number;
  warnings: string[];
  request?: RequestInfo;
  root: TimingJSON;
  /** Custom timings per category, present when there are any. */
  customSummary?: CategorySummaryJSON[];
  /** Groups of similar custom timings (N+1), present when there are custom timings. */
  similar?: SimilarGroupJSON[];
  /**
   * The largest event-loop delay seen while the profile was open, when it exceeded `blockingMs`
   * (measured against real time, so only with the default clock), counting only the time the
   * process was running (see `notRunMs`).
   */
  eventLoopDelayMs?: number;
  /**
   * How long the process did not run at all while its event loop was due (a busy machine, a
   * paused process), when more than `blockingMs`: no step is blamed for this time. Default clock only.
   */
  notRunMs?: number;
  /**
   * The first profile measured since the process started, and its event loop was held: that may be
   * one-time startup work (module loading, compilation) rather than the steps' own.
   */
  startup?: true;
  /** The trace this profile belongs to: an OpenTelemetry span was active as it opened (miniprof/otel). */
  traceId?: string;
  /** The request was CPU-sampled on request (`x-miniprof-cpu: 1` or the badge's "Profile CPU"). */
  cpu?: CpuJSON;
  /**
   * What miniprof itself spent on the response after the app handed it over (finding the
   * comment's place, rendering the comment and `Server-Timing`, sealing), in ms; not part of any
   * step's time. Set by the HTTP adapters when it is above 0.
   */
  miniprofMs?: number;
}
