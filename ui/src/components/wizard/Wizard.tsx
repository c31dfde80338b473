// The guided first-time setup (PRODUCT.md §1.1), the shell: the step list, Next / choose / close
// forwarded to the Rust side (app/src/setup owns the steps, what blocks each and the saved state),
// and which step's screen renders; each screen is its own file in this folder.
import { useState } from "preact/hooks";
import * as engine from "../../api/engine";
import type { Blocker, IpcError, ModelInfo, SetupSettings, SetupStep } from "../../generated/ipc";
import { Blockers } from "./Blockers";
import { Drives } from "./Drives";
import { Hardware } from "./Hardware";
import { Jobs } from "./Jobs";
import { Presets } from "./Presets";
import { SpeedTest } from "./SpeedTest";
import type { StepChoice } from "./stepProps";
import { Welcome } from "./Welcome";

const STEPS: { step: SetupStep; label: string }[] = [
  { step: "welcome", label: "Welcome" },
  { step: "hardware", label: "Hardware" },
  { step: "drives", label: "Drives" },
  { step: "speedTest", label: "Speed test" },
  { step: "preset", label: "Preset" },
  { step: "download", label: "Download" },
  { step: "pack", label: "Pack trunk" },
  { step: "firstLoad", label: "First load" },
  { step: "ready", label: "Ready" },
];

export interface WizardProps {
  initial: SetupSettings;
  /** The wizard finished with this model loaded. */
  onReady(model: ModelInfo): void;
  /** "Try the demo model": close the wizard for now. */
  onClose(): void;
}

export function Wizard({ initial, onReady, onClose }: WizardProps) {
  const [settings, setSettings] = useState(initial);
  const [blockers, setBlockers] = useState<Blocker[]>([]);
  const [error, setError] = useState<IpcError | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const step = settings.step;

  const guard = async <T,>(f: () => Promise<T>): Promise<T | undefined> => {
    setError(null);
    try {
      return await f();
    } catch (e) {
      setError(engine.toIpcError(e));
      return undefined;
    }
  };
  const next = async () => {
    setNote(null);
    const r = await guard(engine.setupNext);
    if (r) {
      setSettings(r.settings);
      setBlockers(r.blockers);
    }
  };
  const choose = async (choice: StepChoice) => {
    const s = await guard(() => engine.setupChoose(choice));
    if (s) {
      setSettings(s);
      setBlockers([]);
    }
  };
  const close = async () => {
    await guard(() => engine.setupPause());
    await guard(() => engine.setupDismiss(true));
    onClose();
  };
  const common = { settings, next, choose, guard, setSettings };

  return (
    <div class="wizard" role="dialog" aria-label="Set up Kimi K3" data-step={step}>
      <ol class="wizard-steps">
        {STEPS.map((s) => (
          <li key={s.step} class={s.step === step ? "current" : ""} aria-current={s.step === step ? "step" : undefined}>
            {s.label}
          </li>
        ))}
      </ol>
      <section class="wizard-body">
        {note && (
          <p class="card amber wizard-note" role="status">
            {note}
          </p>
        )}
        {step === "welcome" && <Welcome {...common} />}
        {step === "hardware" && <Hardware {...common} />}
        {step === "drives" && <Drives {...common} />}
        {step === "speedTest" && <SpeedTest {...common} />}
        {step === "preset" && <Presets {...common} />}
        {(step === "download" || step === "pack" || step === "firstLoad" || step === "ready") && (
          <Jobs {...common} onReady={onReady} onCancelled={setNote} />
        )}
        <Blockers blockers={blockers} onConfirm={(key) => void choose({ confirm: key }).then(next)} />
        {error && (
          <p class="wizard-error" role="alert">
            {error.message}
          </p>
        )}
      </section>
      <footer class="wizard-foot">
        <button type="button" class="link" data-testid="try-demo" onClick={() => void close()}>
          Try the demo model
        </button>
      </footer>
    </div>
  );
}
