// End-to-end test of the Queue tab in the real window, on the bundled demo model: new-chat settings
// set to greedy (the queue samples with them), prompts typed and a JSONL file imported, per-prompt
// progress, the app killed with SIGKILL mid-queue and started again (the queue carries on; no
// prompt runs twice, every identical prompt gets the identical answer, the golden prompt the chat
// journey's exact reply), pause and resume, the answers exported. Screenshots:
// target/e2e-screenshots/queue-*.png.
//
// Usage: node e2e/queue.e2e.mjs /absolute/path/to/k3-desktop DATA_DIR   (tauri-driver on 127.0.0.1:4444)
import { readFileSync, writeFileSync } from 'node:fs';
import { GOLDEN, check, invoke, journey, killApp, launchOnDemo, openSettings, retype, screenshot } from './harness.mjs';
import { KEYS } from './webdriver.mjs';

const app = process.argv[2];
const dataDir = process.argv[3];
const base = process.env.WEBDRIVER_URL || 'http://127.0.0.1:4444';
const shot = (d, name) => screenshot(d, `queue-${name}`);
/** Prompts of the imported file, repeated: identical prompts must get identical answers. */
const ASKED = ['What is a cat?', 'Tell me about the sea', GOLDEN.prompt];
const IMPORTED = 120;

let d = null;
const run = journey(async () => {
  await shot(d, 'failure.png');
  console.log(`window text: ${await d.exec('return document.body.innerText.slice(0, 2000);')}`);
});

/** Starts the app and waits for the chat on the demo model (a fresh install: "Try the demo model"). */
const launch = () => launchOnDemo(base, app);

async function openQueue(driver) {
  const opened = await driver.exec(
    `const b = [...document.querySelectorAll('.tabs button')].find(b => b.textContent === 'Queue'); if (b) b.click(); return !!b;`,
  );
  check(opened, 'no Queue tab');
  await driver.until('the queue view', async () => (await driver.findAll('[data-testid=queue-view]')).length === 1);
}

/** The queue's rows as the window shows them. */
const rows = (driver) =>
  driver.exec(`return [...document.querySelectorAll('.queue-item')].map(li => ({
    id: Number(li.dataset.id), status: li.dataset.status, prompt: li.querySelector('.queue-prompt').textContent,
    progress: li.querySelector('[data-testid=queue-item-progress]').textContent }));`);

/** Each finish line of the journal, by item id. */
function finishLines() {
  const lines = readFileSync(`${dataDir}/queue/queue.jsonl`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  return lines.filter((l) => l.event === 'finish');
}

d = await launch();
try {
  await run.step('new-chat settings: greedy, 24 tokens (the queue answers with them)', async () => {
    await openSettings(d, 'New chats');
    await retype(d, 'input[aria-label="Default temperature"]', 0);
    await retype(d, 'input[aria-label="Default max tokens"]', GOLDEN.maxTokens);
    await d.click(await d.find('[data-testid=new-chat-settings] button[type=submit]'));
    await d.until('the defaults saved', async () => {
      const saved = JSON.parse(readFileSync(`${dataDir}/chat-defaults.json`, 'utf8'));
      return saved.temperature === 0 && saved.maxTokens === GOLDEN.maxTokens;
    });
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });

  await run.step('typed prompts and an imported JSONL file are queued and answered one after another', async () => {
    await openQueue(d);
    await shot(d, '01-empty.png');
    await d.type(await d.find('[data-testid=queue-typed]'), `${GOLDEN.prompt}${KEYS.enter}What is a cat?`);
    await d.click(await d.find('[data-testid=queue-add]'));
    await d.until('two typed prompts answered', async () => (await rows(d)).filter((r) => r.status === 'done').length === 2, 60000);
    const file = `${dataDir}/../queue-prompts.jsonl`;
    const lines = Array.from({ length: IMPORTED }, (_, i) => JSON.stringify({ id: `q${i + 1}`, prompt: ASKED[i % ASKED.length] }));
    writeFileSync(file, lines.join('\n') + '\n');
    await d.exec(`document.querySelector('[data-testid=queue-file]').hidden = false;`);
    await d.type(await d.find('[data-testid=queue-file]'), file);
    await d.exec(`document.querySelector('[data-testid=queue-file]').hidden = true;`);
    await d.until('the import queued', async () => (await rows(d)).length === IMPORTED + 2, 20000);
    await d.until('a prompt under way', async () => (await rows(d)).some((r) => r.status === 'running'), 20000);
    await shot(d, '02-running.png');
    const summary = await d.text(await d.find('[data-testid=queue-summary]'));
    check(/waiting/.test(summary) && /answered/.test(summary), `summary: ${summary}`);
  });

  await run.step('killed mid-queue (SIGKILL), started again: it carries on and runs nothing twice', async () => {
    await d.until('some of the import answered', async () => (await rows(d)).filter((r) => r.status === 'done').length >= 12, 120000);
    const before = finishLines().length;
    check(before < IMPORTED + 2, `the whole queue finished before the kill (${before} answered): nothing was interrupted`);
    await killApp(d, app);
    d = await launch();
    await openQueue(d);
    await shot(d, '03-after-restart.png');
    await d.until('the whole queue answered', async () => (await rows(d)).every((r) => r.status === 'done'), 300000);
    const lines = finishLines();
    const ids = lines.map((l) => l.id).sort((a, b) => a - b);
    check(ids.length === IMPORTED + 2 && ids.every((id, i) => id === i + 1), `finish lines: ${ids.length}, ids ${ids.slice(0, 10)}…`);
    // Greedy: every identical prompt has the identical answer, before and after the kill.
    const exported = await invoke(d, 'queue_export', { format: 'jsonl' });
    check(!exported.failed, `export failed: ${JSON.stringify(exported.failed)}`);
    const answers = exported.content.trim().split('\n').map((l) => JSON.parse(l));
    check(answers.length === IMPORTED + 2, `exported ${answers.length} answers`);
    for (const prompt of ASKED) {
      const texts = new Set(answers.filter((a) => a.prompt === prompt).map((a) => a.text));
      check(texts.size === 1, `"${prompt}" got ${texts.size} different answers`);
    }
    const golden = JSON.parse(readFileSync(GOLDEN.file, 'utf8'));
    const asked = answers.find((a) => a.prompt === GOLDEN.prompt);
    // The chat's text was read from the window (rendered Markdown): compared up to whitespace.
    const squash = (t) => t.replace(/\s+/g, ' ').trim();
    check(squash(asked.text) === squash(golden.text), `the queue's answer differs from the chat's:\n${asked.text}\n---\n${golden.text}`);
    const csv = await invoke(d, 'queue_export', { format: 'csv' });
    check(csv.content.split('\n')[0].startsWith('id,prompt,system,status,text'), `CSV header: ${csv.content.split('\n')[0]}`);
    await d.exec(`document.querySelector('.queue-item[data-status=done] details').open = true;`);
    await shot(d, '04-done.png');
  });

  await run.step('pause stops the queue and resume finishes it; clear finished empties the list', async () => {
    await d.click(await d.find('[data-testid=queue-clear]'));
    await d.until('an empty list', async () => (await rows(d)).length === 0);
    const file = `${dataDir}/../queue-cats.csv`;
    writeFileSync(file, 'prompt\n' + Array.from({ length: IMPORTED }, () => 'What is a cat?').join('\n') + '\n');
    await d.exec(`document.querySelector('[data-testid=queue-file]').hidden = false;`);
    await d.type(await d.find('[data-testid=queue-file]'), file);
    await d.exec(`document.querySelector('[data-testid=queue-file]').hidden = true;`);
    await d.until('a prompt under way', async () => (await rows(d)).some((r) => r.status === 'running' || r.status === 'done'), 20000);
    await d.click(await d.find('[data-testid=queue-pause]'));
    await d.until('the paused banner', async () => /Paused/.test(await d.text(await d.find('[data-testid=queue-stopped]'))), 20000);
    // The running prompt stops at its next token and waits again.
    const paused = await d.until('no prompt running', async () => {
      const now = await rows(d);
      return now.some((r) => r.status === 'running') ? null : now;
    }, 10000);
    check(paused.some((r) => r.status === 'waiting'), 'the whole queue ran before Pause');
    await shot(d, '05-paused.png');
    await d.click(await d.find('[data-testid=queue-resume]'));
    await d.until('all answered after Resume', async () => (await rows(d)).every((r) => r.status === 'done'), 120000);
    const texts = new Set((await invoke(d, 'queue_export', { format: 'jsonl' })).content.trim().split('\n').map((l) => JSON.parse(l).text));
    check(texts.size === 1, `the same prompt got ${texts.size} answers across the pause`);
    await shot(d, '06-resumed-done.png');
  });
} finally {
  await d.quit().catch(() => undefined);
  console.log(run.summary());
  if (run.failed > 0) process.exitCode = 1;
}
