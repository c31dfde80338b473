// Settings › Performance: speculative decoding (how many tokens a reply may draft from its own
// context and verify in one pass; the same reply word for word, applied from the next reply)
// and how many conversations keep their engine state to resume after a restart.
// Owns: the two settings' words; saving is controllers/performance.ts's, the draft's check
// state/performance.ts's.
import { saveResume, saveSpeculation } from "../controllers/performance";
import type { ResumeChoice, SavedStates, SpeculationChoice } from "../generated/ipc";
import { parseDraft } from "../state/performance";
import { parseCount } from "../state/counts";
import { CountSetting } from "./CountSetting";

export function SpeculationSetting({ saved, max }: { saved: SpeculationChoice; max: number }) {
  return (
    <CountSetting
      testId="speculation-setting"
      title="Speculative decoding"
      label="Draft tokens per pass"
      placeholder="0 (off)"
      initial={saved.maxDraft === 0 ? "" : String(saved.maxDraft)}
      parse={(t) => parseDraft(t, max)}
      save={saveSpeculation}
      saved={(n) => (n === 0 ? "Saved: replies decode one token per pass." : `Saved: from the next reply, up to ${n} drafted tokens are checked per pass.`)}
    >
      Drafts the next tokens from text the conversation already holds and checks them in one pass: the same reply, word for word, sooner when the reply
      repeats its context (code, lists) and the model streams from the drive. Off when empty or 0; applies from the next reply.
    </CountSetting>
  );
}

const gb = (bytes: number) => (bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`);

export function ResumeSetting({ saved, max, usage }: { saved: ResumeChoice; max: number; usage: SavedStates }) {
  return (
    <CountSetting
      testId="resume-setting"
      title="Resume after a restart"
      label="Conversations kept"
      placeholder={String(saved.keep)}
      initial={String(saved.keep)}
      parse={(t) => parseCount(t, max, saved.keep, "Conversations kept")}
      save={saveResume}
      saved={(n) => (n === 0 ? "Saved: no engine state is kept; a restart replays each conversation." : `Saved: the ${n} most recent conversations keep their engine state.`)}
    >
      After each reply the engine&apos;s state of the conversation is saved, so the next message after a restart is read alone instead of the whole history.
      Now {usage.count} saved, {gb(usage.bytes)} in the app&apos;s data folder (a real K3 conversation takes about half a gigabyte).
    </CountSetting>
  );
}
