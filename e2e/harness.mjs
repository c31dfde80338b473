// What every end-to-end journey shares: named steps that print "ok"/"FAIL" with their time and
// count towards the closing "N passed, N failed" line (scripts/test.sh sums it), and checks.
import { mkdirSync, writeFileSync } from 'node:fs';

/** Where screenshots go: target/e2e-screenshots/. */
export const SHOTS = new URL('../target/e2e-screenshots/', import.meta.url).pathname;
mkdirSync(SHOTS, { recursive: true });

export function check(cond, message) {
  if (!cond) throw new Error(message);
}

export async function screenshot(d, name) {
  writeFileSync(SHOTS + name, await d.screenshot());
}

/** A journey's step runner; `onFail` runs before a failing step rethrows (a screenshot, say). */
export function journey(onFail = async () => undefined) {
  const tally = { passed: 0, failed: 0 };
  tally.step = async (name, body) => {
    const start = Date.now();
    try {
      await body();
      tally.passed += 1;
      console.log(`ok   ${name} (${Date.now() - start} ms)`);
    } catch (e) {
      tally.failed += 1;
      console.log(`FAIL ${name}: ${e.stack || e}`);
      await onFail().catch(() => undefined);
      throw e;
    }
  };
  tally.summary = () => `${tally.passed} passed, ${tally.failed} failed`;
  return tally;
}
