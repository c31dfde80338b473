// The Hardware step: this machine's CPU and memory cards with the Rust side's verdict on each, and
// Check again.
import { useMachine } from "../../controllers/wizard";
import { CodeSpans } from "../CodeSpans";
import type { StepProps } from "./stepProps";

export function Hardware({ next, calls }: StepProps) {
  const [view, again] = useMachine(null, calls);
  return (
    <div>
      <h2>This machine</h2>
      {!view && <p>Measuring…</p>}
      {view && (
        <div class="cards">
          <div class={`card ${view.cpu.level}`} data-item="cpu">
            <h3>{view.cpu.title}</h3>
            <p>{view.cpuText}</p>
            <p>
              <CodeSpans text={view.cpu.message} />
            </p>
          </div>
          <div class={`card ${view.memory.level}`} data-item="memory">
            <h3>{view.memory.title}</h3>
            <p>{view.memoryText}</p>
            <p>
              <CodeSpans text={view.memory.message} />
            </p>
          </div>
        </div>
      )}
      <div class="wizard-actions">
        <button type="button" onClick={again}>
          Check again
        </button>
        <button type="button" class="primary" onClick={() => void next()} disabled={!view}>
          Next
        </button>
      </div>
    </div>
  );
}
