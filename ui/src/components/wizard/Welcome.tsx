// The Welcome step: what running Kimi K3 here takes, Start, and "I already have the files" (a folder
// whose checkpoint is hashed in place and adopted instead of downloaded).
import { useState } from "preact/hooks";
import type { StepProps } from "./stepProps";

export function Welcome({ next, calls, setSettings }: StepProps) {
  const [adopting, setAdopting] = useState(false);
  const [path, setPath] = useState("");
  const adopt = async () => {
    const s = await calls.adopt(path.trim());
    if (s) setSettings(s);
  };
  return (
    <div>
      <h2>Run Kimi K3 on this computer</h2>
      <p>
        Kimi K3 has 2.78 trillion parameters: 1.56 TB of checkpoint plus a 0.11 TB packed trunk on a drive you choose. Only what
        each token needs is read, so it runs on the RAM you have — honestly, at seconds per token: about 30 s at 8 GB, about 6 s
        with 128 GB and a fast NVMe drive.
      </p>
      <p>The next screens measure this machine, its drives and their speed before a single byte is downloaded.</p>
      <div class="wizard-actions">
        <button type="button" class="primary" onClick={() => void next()}>
          Start
        </button>
        <button type="button" onClick={() => setAdopting((a) => !a)} aria-expanded={adopting}>
          I already have the files
        </button>
      </div>
      {adopting && (
        <div class="adopt">
          <label>
            Folder with the checkpoint
            <input type="text" name="adopt" value={path} onInput={(e) => setPath((e.target as HTMLInputElement).value)} placeholder="/models/Kimi-K3" />
          </label>
          <button type="button" onClick={() => void adopt()} disabled={path.trim() === ""}>
            Use these files
          </button>
          <p class="hint">Every file is hashed in place against the pinned release; only missing or damaged files are fetched.</p>
        </div>
      )}
    </div>
  );
}
