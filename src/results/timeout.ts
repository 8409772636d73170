/**
 * `call()` bounded by `ms`: settles as it does, or rejects with `message` once `ms` have passed.
 * A call that throws synchronously rejects. The timer is unref'd, so a store that never answers
 * cannot keep the process alive.
 */
export function withTimeout<T>(call: () => T | PromiseLike<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref();
    new Promise<T>((res) => res(call())).then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
