// Batches generation events so the UI renders at most once per frame.
// Owns: the queue between the IPC channel (the demo model sends ~1000 tokens/s) and the reducer.
// Must not: drop or reorder events; the reducer folds each batch in arrival order.
// Easy to break: requestAnimationFrame pauses in a hidden window, so a timer backs it up; otherwise a
// reply finishing in the background would not be saved to the view until the window is shown.

export interface Scheduler {
  frame(cb: () => void): void;
  timer(cb: () => void, ms: number): void;
  now(): number;
}

export const browserScheduler: Scheduler = {
  frame: (cb) => {
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(cb);
    else setTimeout(cb, 16);
  },
  timer: (cb, ms) => void setTimeout(cb, ms),
  now: () => Date.now(),
};

/** Returns a push function; `flush` receives each batch with its delivery time. */
export function createBatcher<E>(
  flush: (events: E[], at: number) => void,
  scheduler: Scheduler = browserScheduler,
  fallbackMs = 100,
): (event: E) => void {
  let queue: E[] = [];
  let scheduled = false;
  const run = () => {
    if (!scheduled) return;
    scheduled = false;
    const batch = queue;
    queue = [];
    if (batch.length) flush(batch, scheduler.now());
  };
  return (event: E) => {
    queue.push(event);
    if (scheduled) return;
    scheduled = true;
    scheduler.frame(run);
    scheduler.timer(run, fallbackMs);
  };
}
