// End-to-end test of tools in the real window, on the bundled demo model and the reference MCP
// filesystem server from npm (tools/mcp-servers): the server added in Settings › Tools with only
// PATH in its environment and its tools listed; a chat that offers it (one tool left on, a call
// required); the call shown as a card and allowed for good ("Always allow"), its result saved and
// the reply continuing from it; the permission revoked; the app killed with SIGKILL while a call
// waits, started again, and the call still waiting; denied; the exchange in the Markdown export.
// Screenshots: target/e2e-screenshots/tools-*.png.
//
// Usage: node e2e/tools.e2e.mjs /absolute/path/to/k3-desktop DATA_DIR SERVER_PROGRAM FILES_DIR
import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { check, invoke, journey, killApp, launchOnDemo, messages, openSettings, retype, screenshot } from './harness.mjs';
import { KEYS } from './webdriver.mjs';

const [app, dataDir, serverProgram, filesDir] = process.argv.slice(2);
const base = process.env.WEBDRIVER_URL || 'http://127.0.0.1:4444';
const shot = (d, name) => screenshot(d, `tools-${name}`);
const nodeDir = dirname(execFileSync('sh', ['-c', 'command -v node']).toString().trim());
const KEEP = 'list_allowed_directories';

let d = null;
const run = journey(async () => {
  await shot(d, 'failure.png');
  console.log(`window text: ${await d.exec('return document.body.innerText.slice(0, 2000);')}`);
});

const launch = () => launchOnDemo(base, app);

const cards = (driver) =>
  driver.exec(`return [...document.querySelectorAll('.pending-call')].map(c => ({ tool: c.dataset.tool, call: c.dataset.call, text: c.textContent }));`);

async function send(text) {
  const composer = await d.find('#composer');
  await d.type(composer, text);
  await d.type(composer, KEYS.enter);
}

d = await launch();
try {
  await run.step('Settings › Tools: the filesystem server added with only PATH, its tools listed', async () => {
    await openSettings(d, 'Tools');
    await d.until('the tools section', async () => (await d.findAll('[data-testid=tool-settings]')).length === 1);
    await d.type(await d.find('[data-testid=tool-name]'), 'Files');
    await d.type(await d.find('[data-testid=tool-command]'), serverProgram);
    await d.type(await d.find('[data-testid=tool-args]'), filesDir);
    await d.type(await d.find('[data-testid=tool-env]'), `PATH=${nodeDir}`);
    await d.click(await d.find('[data-testid=tool-save]'));
    await d.until('the server listed', async () => (await d.findAll('.tool-server-list li[data-server=files]')).length === 1);
    await d.click(await d.find('.tool-server-list li[data-server=files] [data-testid=tool-list]'));
    await d.until('its tools listed', async () => (await d.findAll(`.listed-tools details[data-tool=${KEEP}]`)).length === 1, 60000);
    await d.exec(`document.querySelector('.listed-tools details[data-tool=read_text_file]').open = true;`);
    await shot(d, '01-settings.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });

  await run.step('a new chat offers the server; one tool left on and a call required', async () => {
    await d.click(await d.find('button[aria-label="New chat"]'));
    await d.until('an empty conversation', async () => (await messages(d)).length === 0);
    await d.click(await d.find('button[aria-label="Conversation settings"]'));
    await d.until('the tools of the chat', async () => (await d.findAll('.conversation-tools [data-server=files]')).length === 1);
    const offered = await d.exec(`return document.querySelector('input[aria-label="Offer Files"]').checked;`);
    check(offered, 'a new chat does not offer the server Settings › Tools offers to new chats');
    await d.click(await d.find('button[aria-label="Choose the tools of Files"]'));
    await d.until('the tool switches', async () => (await d.findAll('[data-tool-switch]')).length > 5, 60000);
    await d.exec(`for (const box of document.querySelectorAll('[data-tool-switch]')) if (box.dataset.toolSwitch !== '${KEEP}' && box.checked) box.click();`);
    await d.click(await d.find('input[aria-label="Replies to my messages must call a tool"]'));
    await retype(d, '#temperature', 0);
    await retype(d, '#max-tokens', 200);
    await shot(d, '02-chat-tools.png');
    await d.click(await d.find('button[aria-label="Save settings"]'));
    await d.until('the settings saved', async () => (await d.findAll('#max-tokens')).length === 0);
  });

  await run.step('the call waits for Allow; "Always allow" runs it and the reply continues from the result', async () => {
    await send('Which folders may you read?');
    await d.until('a call waiting', async () => (await cards(d)).length > 0, 120000);
    const waiting = await cards(d);
    check(waiting.every((c) => c.tool === KEEP && /on Files/.test(c.text)), `cards: ${JSON.stringify(waiting)}`);
    await shot(d, '03-call-waiting.png');
    check((await d.findAll('.message[data-role=tool]')).length === 0, 'a tool ran before the user allowed it');
    await d.click(await d.find(`button[aria-label="Always allow ${KEEP}"]`));
    await d.until('every call answered and the reply to the results written', async () => {
      const shown = await messages(d);
      const last = shown[shown.length - 1];
      return (await cards(d)).length === 0 && last?.role === 'assistant' && last.id && shown.some((m) => m.role === 'tool');
    }, 120000);
    const results = await d.exec(`return [...document.querySelectorAll('.message[data-role=tool] .tool-text')].map(t => t.textContent);`);
    check(results.length === waiting.length, `${results.length} results for ${waiting.length} calls`);
    check(results.every((t) => t.includes(filesDir)), `a result lacks the allowed folder: ${results[0]}`);
    await d.exec(`document.querySelector('.message[data-role=tool] details.tool-result').open = true;`);
    await shot(d, '04-answered.png');
  });

  await run.step('the always-allowed tool is listed in Settings › Tools and revoked there', async () => {
    await openSettings(d, 'Tools');
    await d.until('the permission listed', async () => (await d.findAll(`button[aria-label="Ask again before ${KEEP}"]`)).length === 1, 20000);
    await shot(d, '05-always-allowed.png');
    await d.click(await d.find(`button[aria-label="Ask again before ${KEEP}"]`));
    await d.until('the permission gone', async () => (await d.findAll('.always-allowed')).length === 0);
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });

  await run.step('killed (SIGKILL) while a call waits, started again: the call still waits; Deny; the reply continues', async () => {
    await send('And which ones now?');
    await d.until('a new call waiting', async () => (await cards(d)).length > 0, 120000);
    const before = (await messages(d)).length;
    await killApp(d, app);
    d = await launch();
    await d.until('the conversation and its waiting call', async () => (await cards(d)).length > 0, 60000);
    check((await messages(d)).length === before, 'the history changed across the kill');
    await shot(d, '06-after-restart.png');
    while ((await cards(d)).length > 0) {
      const [first] = await cards(d);
      await d.click(await d.find(`.pending-call[data-call="${first.call}"] button[aria-label="Deny ${KEEP}"]`));
      await d.until('the call denied', async () => !(await cards(d)).some((c) => c.call === first.call), 20000);
    }
    await d.until('the reply to the denials', async () => {
      const shown = await messages(d);
      return shown[shown.length - 1]?.role === 'assistant' && shown.length > before;
    }, 120000);
    const denied = await d.exec(`return [...document.querySelectorAll('.message[data-role=tool][data-status=failed] .tool-text')].map(t => t.textContent);`);
    check(denied.some((t) => t.includes('the user denied this call')), `denied results: ${JSON.stringify(denied)}`);
  });

  await run.step('the export holds the calls and their results', async () => {
    const list = await invoke(d, 'list_conversations', {});
    const md = await invoke(d, 'export_conversation', { id: list[0].id, format: 'markdown' });
    check(md.content.includes(`Tool result: ${KEEP}`) && md.content.includes(filesDir), 'the Markdown export lacks the tool results');
    check(md.content.includes('the user denied this call'), 'the Markdown export lacks the denial');
  });
} finally {
  await d.quit().catch(() => undefined);
  console.log(run.summary());
  if (run.failed > 0) process.exitCode = 1;
}
