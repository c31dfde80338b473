// The Speed test step: the test folder, the running test's progress, and the measured random-read
// rates (one and 16 at a time, the best pattern) against reference NVMe drives.
import { useReducer, useState } from "preact/hooks";
import { emptyJob, foldSetup } from "../../state/setup";
import { bar, speedProgressText, speedRows, speedRunLabel } from "../../state/wizard";
import type { StepProps } from "./stepProps";

export function SpeedTest({ settings, next, calls, setSettings }: StepProps) {
  const [dir, setDir] = useState(settings.storeDir ?? "");
  const [job, fold] = useReducer(foldSetup, emptyJob);
  const [running, setRunning] = useState(false);
  const run = async () => {
    setRunning(true);
    const r = await calls.speedTest(dir.trim(), fold);
    setRunning(false);
    if (r) setSettings({ ...settings, speed: r });
  };
  const s = settings.speed;
  const progress = running && job.speedTest ? { bar: bar(job.speedTest.fraction, 1), text: speedProgressText(job.speedTest) } : null;
  return (
    <div>
      <h2>How fast the drive really is</h2>
      <p>
        Random reads of one expert (17,547,264 bytes) straight from the drive, bypassing the page cache, one at a time and 16 at a
        time — the way the engine reads.
      </p>
      <label>
        Test folder (a scratch file is written there and removed)
        <input type="text" name="speed-dir" value={dir} onInput={(e) => setDir((e.target as HTMLInputElement).value)} />
      </label>
      {progress && (
        <div class="bar" role="progressbar" aria-valuenow={progress.bar.now}>
          <div style={{ width: progress.bar.width }} />
          <span>{progress.text}</span>
        </div>
      )}
      {s && (
        <table class="speed">
          <tbody>
            {speedRows(s).map((row) => (
              <tr key={row.depth} data-depth={row.depth}>
                <th>{row.label}</th>
                <td>{row.cells[0]}</td>
                <td>{row.cells[1]}</td>
                <td>{row.cells[2]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {s && !s.direct && <p class="card amber">This file system refused direct reads; the figures were taken with the page cache dropped.</p>}
      <div class="wizard-actions">
        <button type="button" onClick={() => void run()} disabled={running || dir.trim() === ""}>
          {speedRunLabel(s)}
        </button>
        <button type="button" class="primary" onClick={() => void next()} disabled={running || !s}>
          Next
        </button>
      </div>
    </div>
  );
}
