export { step, timing, currentProfile, withProfile } from './step.js';
export { renderText, renderHtmlComment, type TextOptions } from './render/text.js';
export { renderServerTiming, type ServerTimingOptions } from './render/server-timing.js';
export type { Timing } from './timing.js';
export type { Profile, ProfileJSON, TimingJSON, CustomTimingJSON, RequestInfo } from './profile.js';
export type { CoreOptions } from './options.js';
export type { Clock, WallClock } from './clock.js';
export type { MiniprofTypeError, MiniprofErrorCode } from './errors.js';
