/**
 * Plumbing: time a data layer spends getting a connection (a pool checkout, a new client's
 * handshake) rather than running a command. It is shown, under the category `connect`, but it is
 * not a command: it is never a duplicate, never similar to anything (every checkout of a pool
 * looks alike, and would read as an N+1), never folds or breaks a fold of the rows around it,
 * and has no Server-Timing metric of its own (its time is in its step's).
 */
export const CONNECT = 'connect';

export function isPlumbing(category: string): boolean {
  return category === CONNECT;
}
