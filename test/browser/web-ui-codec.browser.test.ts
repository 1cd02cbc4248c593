import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, parseKeyring } from '../../codec/aes-gcm-codec';
import { codecEndpointWithToken, startCodecServer, type CodecServer } from '../../codec/codec-server';
import { freePort } from '../../connection/ports';
import { openDetails, pageText, sendFromUi, shownSignalJson, untilShown, useWebUi, WEB_UI_OUTPUT as OUTPUT } from '../helpers/web-ui';
import { waitForState } from '../helpers/turn-runner';

const KEYS_ENV = 'TOLLGATE_TEST_UI_CODEC_KEYS';
const keyring = `ui:${randomBytes(32).toString('base64')}`;
const token = randomBytes(24).toString('hex');
/** On the prompt's second line: not in the turn's summary, only in its encrypted input. */
const SECRET = 'the second line names project nightingale';

let codecPort: number;
let codecServer: CodecServer | undefined;

// Before the shared setup (hooks run in the order given): the worker's keyring and the codec server's port.
beforeAll(async () => {
  process.env[KEYS_ENV] = keyring;
  codecPort = await freePort();
});

afterAll(async () => {
  await codecServer?.close();
  delete process.env[KEYS_ENV];
});

// The dev server is told the codec endpoint with the token in its path, as `tollgate server` does.
const ui = useWebUi({
  config: { encryption: { keysEnv: KEYS_ENV } },
  encrypted: true,
  uiCodecEndpoint: () => codecEndpointWithToken(`http://127.0.0.1:${codecPort}`, token),
});

/** `tollgate codec-server` for the UI's origin, started once it is needed. */
async function runCodecServer(): Promise<void> {
  const codec = new AesGcmCodec(parseKeyring(keyring, KEYS_ENV));
  codecServer ??= await startCodecServer({ codec, token, port: codecPort, origins: [new URL(ui.server.uiUrl!).origin] });
}

describe('the dev server Web UI with encrypted payloads', () => {
  it('decodes through the token-protected codec server, and shows nothing readable without it', async () => {
    const handle = await ui.client.startTurn({ taskId: 'web-ui-codec', prompt: `Who must approve a refund above 2,000 EUR?\n${SECRET}` });
    await waitForState(ui.client.client.workflow.getHandle(handle.workflowId), (state) => state.pendingApprovals.length > 0);
    const page = await ui.browser.newPage({ viewport: { width: 1400, height: 1000 } });
    mkdirSync(OUTPUT, { recursive: true });

    // No codec server answers yet: the input stays encrypted on screen.
    await page.goto(ui.client.uiLink(ui.server.uiUrl!, handle), { waitUntil: 'domcontentloaded' });
    await untilShown(page, (text) => text.includes('Input'), 'the workflow page');
    await page.waitForTimeout(2_000);
    expect(await pageText(page)).not.toContain(SECRET);

    // With `tollgate codec-server` running for the UI's origin, the same page decodes.
    await runCodecServer();
    await page.reload({ waitUntil: 'domcontentloaded' });
    const decoded = await untilShown(page, (text) => text.includes(SECRET), 'the decoded input');
    expect(decoded).toContain('web-ui-codec');
    await page.screenshot({ path: path.join(OUTPUT, 'decoded-input.png'), fullPage: true });
    await page.close();

    const waiting = (await ui.client.state(handle.workflowId)).pendingApprovals[0];
    await ui.client.deny(handle.workflowId, waiting.callId, { reason: 'browser test', argsDigest: waiting.argsDigest });
    expect((await ui.client.result(handle.workflowId)).toolCalls.at(-1)).toMatchObject({ status: 'denied', executions: 0 });
  });

  it('takes an approval sent from the Web UI, which encodes it through the codec server', async () => {
    await runCodecServer();
    const handle = await ui.client.startTurn({ taskId: 'web-ui-codec-signal', prompt: 'Who must approve a refund above 2,000 EUR?' });
    await waitForState(ui.client.client.workflow.getHandle(handle.workflowId), (state) => state.pendingApprovals.length > 0);
    const page = await openDetails(ui, handle);
    const decision = { ...(await shownSignalJson(page, 'approval')), approver: 'maria' };
    await sendFromUi(page, 'approval', JSON.stringify(decision), 'signal-approval-encrypted.png');
    await page.close();

    expect((await ui.client.result(handle.workflowId)).toolCalls.at(-1)).toMatchObject({
      tool: 'send_message',
      status: 'success',
      executions: 1,
    });
    const state = await ui.client.state(handle.workflowId);
    expect(state.decisions).toEqual([{ callId: 'call-3-0', decision: 'approve', approver: 'maria' }]);
    expect(state.rejectedDecisions).toEqual([]);
    // The server recorded the signal encrypted: the UI had the codec server encode it.
    const history = await ui.client.client.workflow.getHandle(handle.workflowId).fetchHistory();
    const signaled = (history.events ?? []).flatMap((event) => event.workflowExecutionSignaledEventAttributes ?? []);
    expect(signaled).toHaveLength(1);
    const payload = signaled[0].input!.payloads![0];
    expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(payload.data!).toString('latin1')).not.toContain('maria');
  });
});
