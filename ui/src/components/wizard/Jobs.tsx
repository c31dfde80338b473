// The job screens (download, pack, first load, ready): starting the Rust side's job and folding its
// events, the download's bar and file grid, pack and load progress, Pause / Resume, and Cancel
// (stop, keep the bytes, return to the drive choice with a note).
import { useEffect, useReducer, useRef, useState } from "preact/hooks";
import { emptyJob, foldSetup } from "../../state/setup";
import {
  awakeText, bar, cancelNote, cellTitle, chosenPreset, downloadLine, jobHeading, jobStep, legendText, offersResume, packLine, resumeLabel,
  resumingText, sortedCells, startsOnOpen,
} from "../../state/wizard";
import { FirstLoad } from "./FirstLoad";
import { ProblemScreen } from "./ProblemScreen";
import type { JobsProps } from "./stepProps";

export function Jobs({ settings, calls, setSettings, choose, onReady, onCancelled }: JobsProps) {
  const [job, fold] = useReducer(foldSetup, emptyJob);
  const [running, setRunning] = useState(false);
  const started = useRef(false);
  const current = useRef<Promise<void> | null>(null);
  const run = () => {
    const go = async () => {
      setRunning(true);
      const model = await calls.run(fold);
      setRunning(false);
      const st = await calls.status();
      if (st) setSettings(st.settings);
      if (model) onReady(model);
    };
    current.current = go();
    return current.current;
  };
  // Cancel = stop (everything durable is kept) and go back to choosing the drive; starting
  // again resumes from the kept bytes.
  const cancel = async () => {
    await calls.pause();
    await current.current;
    await choose({ backTo: "drives" });
    onCancelled(cancelNote(job, settings.storeDir));
  };
  useEffect(() => {
    if (!started.current && startsOnOpen(settings)) {
      started.current = true;
      void run();
    }
  }, []);
  const step = jobStep(job, settings);
  const resuming = resumingText(job);
  const download = bar(job.doneBytes, job.totalBytes);
  return (
    <div data-events={job.events}>
      <h2>{jobHeading(step)}</h2>
      {resuming && <p class="resume">{resuming}</p>}
      {step === "download" && (
        <>
          <div class="bar" role="progressbar" aria-valuenow={download.now}>
            <div style={{ width: download.width }} />
            <span>{downloadLine(job)}</span>
          </div>
          <p class="legend">{legendText(job.files)}</p>
          <div class="grid" aria-label="Files">
            {sortedCells(job.files).map((c) => (
              <span key={c.path} class={`cell ${c.state}`} title={cellTitle(c)} data-path={c.path} />
            ))}
          </div>
        </>
      )}
      {step === "pack" && job.pack && <p>{packLine(job.pack)}</p>}
      {step === "firstLoad" && <FirstLoad preset={chosenPreset(settings)} progress={job.firstLoad} />}
      {job.awake && running && (
        <p class="legend" data-testid="awake" title={job.awake.detail ?? undefined}>
          {awakeText(job.awake)}
        </p>
      )}
      {job.retry && <p class="card amber retry">{job.retry}</p>}
      {job.paused && <p class="card amber">Paused: {job.paused}</p>}
      {job.notices.length > 0 && (
        <ul class="notices">
          {job.notices.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
      {job.phase === "paused" && <p>Paused. Everything downloaded so far is kept.</p>}
      {job.problem && <ProblemScreen problem={job.problem} calls={calls} retry={() => void run()} />}
      <div class="wizard-actions">
        {running ? (
          <button type="button" onClick={() => void calls.pause()}>
            Pause
          </button>
        ) : (
          offersResume(settings, job) && (
            <button type="button" class="primary" onClick={() => void run()}>
              {resumeLabel(job)}
            </button>
          )
        )}
        {step === "download" && (
          <button type="button" data-testid="cancel-download" onClick={() => void cancel()}>
            Cancel
          </button>
        )}
      </div>
    </div>
  );
}
