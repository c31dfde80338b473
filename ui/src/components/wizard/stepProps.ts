// What the wizard shell hands each step screen: StepProps (controllers/wizard.ts's) and JobsProps
// for the job screens. Types only: the screens' engine calls come through `calls`.
import type { StepProps } from "../../controllers/wizard";
import type { ModelInfo } from "../../generated/ipc";

export type { StepChoice, StepProps } from "../../controllers/wizard";

export interface JobsProps extends StepProps {
  onReady(m: ModelInfo): void;
  /** The download was cancelled (partials kept): the words to show on the screen it returns to. */
  onCancelled(note: string): void;
}
