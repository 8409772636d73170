/** The v1 JSON of a profile (`Profile.toJSON()`): what leaves the process, stable and versioned. */

/** Per category, in the profile's JSON: how many custom timings, how long, how repetitive. */
export interface CategorySummaryJSON {
  category: string;
  count: number;
  durationMs: number;
  /** Timings whose exact command (with its values) ran more than once. */
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
  /** The same category and command, values included, ran more than once in this profile. */
  duplicate?: true;
  /** The id of this command's group of similar commands (`ProfileJSON.similar`), if it has one. */
  similar?: number;
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
  /** Its synchronous part (`syncMs`, or the whole of a synchronous step) exceeded `blockingMs`. */
  blocking?: true;
  /**
   * When two or more children overlapped in time: the sum of their durations over this step's
   * (≈N when N ran in parallel, ≈1 when they really took turns).
   */
  parallelism?: number;
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
   * (measured against real time, so only with the default clock).
   */
  eventLoopDelayMs?: number;
}
