// Settings › Performance: the kernel threads and the expert reads kept in flight (applied by
// reopening the model, after the reply in progress), what the model runs with now, speculative
// decoding (SpeculationSetting), and the drive speed test run again on the model's drive (the
// engine then reads with its best pattern).
// Owns: drawing the form, the threads in use and the speed test's live bar. The view, the form and
// the actions are controllers/performance.ts's; checks and words state/performance.ts's.
import { usePerformance } from "../controllers/performance";
import type { ModelInfo } from "../generated/ipc";
import { mib as mb, speedLine } from "../state/performance";
import { ResumeSetting, SpeculationSetting } from "./SpeculationSetting";

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export function PerformanceSettings({ onApplied }: { onApplied?(m: ModelInfo): void }) {
  const p = usePerformance(onApplied);
  const { view, form, status, busy, speedBar } = p;
  if (!view || !form) return <section class="settings-section"><h2>Performance</h2><p>{status ?? "Loading…"}</p></section>;

  const envNote = (n: number | null, name: string) => (n === null ? "" : ` (${name}=${n})`);
  const computeDefault = view.fromEnv.compute ?? view.cores;
  const ioDefault = view.fromEnv.io ?? view.defaultIo;
  const u = view.inUse;
  return (
    <section class="settings-section" aria-labelledby="performance-title" data-testid="performance-settings">
      <h2 id="performance-title">Performance</h2>
      <p class="muted">Threads are set when the model opens, so applying reopens it (as long as a start takes). The output does not change, only the speed.</p>
      <dl class="facts" data-testid="threads-in-use">
        <dt>In use</dt>
        <dd>{u
            ? `${plural(u.compute, "compute thread", "compute threads")} · ${plural(u.io, "expert read", "expert reads")} in flight · streamed reads ${mb(u.readRequestBytes)} × ${u.readDepth}`
            : "no model is open"}</dd>
        <dt>This machine</dt>
        <dd>{view.cores} cores</dd>
      </dl>
      <form
        class="new-chat-form"
        onSubmit={(e) => {
          e.preventDefault();
          void p.apply();
        }}
      >
        <label>
          <span>Compute threads</span>
          <input
            aria-label="Compute threads"
            inputMode="numeric"
            placeholder={`${computeDefault}${envNote(view.fromEnv.compute, "OMP_NUM_THREADS")}`}
            value={form.compute}
            onInput={(e) => p.edit({ compute: e.currentTarget.value })}
          />
        </label>
        <label>
          <span>I/O threads <span class="muted">(expert reads in flight)</span></span>
          <input
            aria-label="I/O threads"
            inputMode="numeric"
            placeholder={`${ioDefault}${envNote(view.fromEnv.io, "K3_ASYNC_IO_THREADS")}`}
            value={form.io}
            onInput={(e) => p.edit({ io: e.currentTarget.value })}
          />
        </label>
        <div class="settings-actions">
          <button type="submit" class="primary" disabled={busy !== null}>
            Apply
          </button>
          <button type="button" disabled={busy !== null} onClick={p.resetToDefaults}>
            Use the defaults
          </button>
        </div>
      </form>
      <SpeculationSetting saved={view.speculation} max={view.maxDraft} />
      <ResumeSetting saved={view.resume} max={view.maxKeep} usage={view.savedStates} />
      <h3>Drive speed</h3>
      <p data-testid="speed-result">{view.speed ? speedLine(view.speed) : "Not measured yet: the engine reads 8 MiB pieces, 8 in flight."}</p>
      <div class="settings-actions">
        <button type="button" data-testid="speed-test" disabled={busy !== null || !view.speedTestDir} onClick={() => void p.speedTest()}>
          Re-run speed test
        </button>
        <span class="muted">
          {view.speedTestDir ? `Reads a scratch file in ${view.speedTestDir} (a minute or two).` : "The bundled demo model is read into RAM: there is no drive to measure."}
        </span>
      </div>
      {speedBar && (
        <div class="bar" role="progressbar" aria-valuenow={Math.round(speedBar.fraction * 100)}>
          <div style={{ width: `${speedBar.fraction * 100}%` }} />
          <span>{speedBar.depth === 0 ? "Finding the best read pattern…" : `${speedBar.depth} in flight: ${speedBar.mbPerS.toFixed(0)} MB/s`}</span>
        </div>
      )}
      {status && <p role="status">{status}</p>}
    </section>
  );
}
