// The failures with a screen of their own: a token field for Hugging Face's 401/403 (or, when HF_TOKEN
// was refused, where to change it), and the files that failed their hash with Download again.
import { useState } from "preact/hooks";
import type { SetupProblem } from "../../generated/ipc";
import { badFilesHeadline, downloadAgainLabel, shortHash } from "../../state/wizard";
import type { StepProps } from "./stepProps";

export function ProblemScreen({ problem, calls, retry }: { problem: SetupProblem; calls: StepProps["calls"]; retry(): void }) {
  const [token, setToken] = useState("");
  if (problem.kind === "denied") {
    const save = async () => {
      const ok = await calls.token(token);
      if (ok !== undefined) retry();
    };
    return (
      <div class="card red problem" data-problem="denied">
        <h3>Hugging Face refused access (HTTP {problem.status})</h3>
        <p>
          {problem.url} needs you to accept the model's licence on its Hugging Face page while signed in, and an access token
          (Settings › Access Tokens on huggingface.co, “read” is enough).
        </p>
        {problem.tokenFromEnv ? (
          <p>HF_TOKEN is set in this app's environment and was refused: change it there and start the app again.</p>
        ) : (
          <>
            <label>
              Access token (saved to {problem.tokenPath}, readable by you only)
              <input type="password" name="hf-token" autoComplete="off" value={token} placeholder="hf_…" onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
            </label>
            <button type="button" class="primary" disabled={token.trim() === ""} onClick={() => void save()}>
              Save token and try again
            </button>
          </>
        )}
      </div>
    );
  }
  return (
    <div class="card red problem" data-problem="badFiles">
      <h3>{badFilesHeadline(problem.files.length)}</h3>
      <p>Their bytes were not kept. A proxy, the disk or RAM may be at fault. Downloading again fetches only these files; every verified file stays.</p>
      <ul class="bad-files">
        {problem.files.map((f) => (
          <li key={f.path}>
            <code>{f.path}</code>: expected SHA-256 <code>{shortHash(f.expected)}</code>, got <code>{shortHash(f.got)}</code>
          </li>
        ))}
      </ul>
      <button type="button" class="primary" onClick={retry}>
        {downloadAgainLabel(problem.files.length)}
      </button>
    </div>
  );
}
