// What blocks the current step, in words (blockerText), with "Continue anyway" on the warnings the
// user may override (a CPU without AVX2, a network drive, a slow drive).
import type { Blocker } from "../../generated/ipc";
import { CodeSpans } from "../CodeSpans";

/** The override key `setup_choose({ confirm })` takes for each blocker that can be overridden. */
const OVERRIDE_KEY: Partial<Record<Blocker["kind"], string>> = { cpuLacksAvx2: "cpu", networkDrive: "networkDrive", slowDrive: "slowDrive" };

export function blockerText(b: Blocker): string {
  switch (b.kind) {
    case "cpuLacksAvx2":
      return `This CPU lacks AVX2/FMA. Scalar kernels give identical output, much slower. (${b.message})`;
    case "tooLittleMemory":
      return `${b.message}. Close other apps, then check again.`;
    case "noStoreChosen":
      return "Choose a folder for the model store.";
    case "notEnoughSpace":
      return `${b.message}. Choose another drive, put the trunk on a second drive, or free space and check again.`;
    case "unsuitableDrive":
      return b.message;
    case "networkDrive":
      return `The store is on ${b.message}.`;
    case "noSpeedTest":
      return "Run the speed test first.";
    case "slowDrive":
      return `Too slow: ${b.message}. A faster drive for the trunk and shards helps most (experts are 17.5 MB random reads).`;
    case "noPreset":
      return "Choose a preset.";
    case "jobUnfinished":
      return "Still working.";
  }
}

export function Blockers({ blockers, onConfirm }: { blockers: Blocker[]; onConfirm(key: string): void }) {
  if (blockers.length === 0) return null;
  return (
    <ul class="blockers" aria-label="What blocks this step">
      {blockers.map((b) => {
        const key = OVERRIDE_KEY[b.kind];
        return (
          <li key={b.kind} class="card red">
            <CodeSpans text={blockerText(b)} />
            {key && (
              <button type="button" onClick={() => onConfirm(key)}>
                Continue anyway
              </button>
            )}
          </li>
        );
      })}
    </ul>
  );
}
