// The guided first-time setup (PRODUCT.md §1.1), the shell: the step list, Next / choose / close
// forwarded to the Rust side through controllers/wizard.ts (app/src/setup owns the steps, what blocks
// each and the saved state), and which step's screen renders; each screen is its own file here.
import { useWizard } from "../../controllers/wizard";
import type { ModelInfo, SetupSettings, SetupStep } from "../../generated/ipc";
import { Blockers } from "./Blockers";
import { Drives } from "./Drives";
import { Hardware } from "./Hardware";
import { Jobs } from "./Jobs";
import { Presets } from "./Presets";
import { SpeedTest } from "./SpeedTest";
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
  const w = useWizard(initial, onClose);
  const { blockers, error, note } = w;
  const step = w.settings.step;
  const common = w.step;

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
          <Jobs {...common} onReady={onReady} onCancelled={w.setNote} />
        )}
        <Blockers blockers={blockers} onConfirm={w.confirm} />
        {error && (
          <p class="wizard-error" role="alert">
            {error.message}
          </p>
        )}
      </section>
      <footer class="wizard-foot">
        <button type="button" class="link" data-testid="try-demo" onClick={() => void w.close()}>
          Try the demo model
        </button>
      </footer>
    </div>
  );
}
