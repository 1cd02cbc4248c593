import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { untilShown, useWebUi, WEB_UI_OUTPUT as OUTPUT } from '../helpers/web-ui';
import { waitForState } from '../helpers/turn-runner';

const ui = useWebUi();

describe('a turn in the Temporal Web UI', () => {
  it('shows the call awaiting approval in the current details and the activity summaries in the timeline', async () => {
    const handle = await ui.client.startTurn({
      taskId: 'web-ui-1',
      prompt: 'Who must approve a refund above 2,000 EUR?\nSecond line not in the summary.',
    });
    await waitForState(ui.client.client.workflow.getHandle(handle.workflowId), (state) => state.pendingApprovals.length > 0);
    const link = ui.client.uiLink(ui.server.uiUrl!, handle);
    const page = await ui.browser.newPage({ viewport: { width: 1400, height: 1000 } });
    mkdirSync(OUTPUT, { recursive: true });

    await page.goto(link, { waitUntil: 'domcontentloaded' });
    await page.getByText('runTool • save_draft drafts/brief-web-ui-1.md').first().waitFor({ timeout: 30_000 });
    for (const summary of [
      'modelStep • model step',
      'runTool • search_local_sources Who must approve a refund above 2,000 EUR?',
      'runTool • get_document refund-policy',
    ]) {
      await expect(page.getByText(summary).first().isVisible()).resolves.toBe(true);
    }
    // The status lookup is a local activity: the UI shows its marker by the activity's name only.
    await expect(page.getByText('lookupStatus', { exact: true }).first().isVisible()).resolves.toBe(true);
    await page.screenshot({ path: path.join(OUTPUT, 'timeline.png'), fullPage: true });

    await page.getByText('User Metadata', { exact: true }).click();
    // The UI renders the summary and the markdown details inside sandboxed frames: read every frame.
    const shown = await untilShown(
      page,
      (all) => all.includes('Waiting for approval') && all.includes('Who must approve a refund above 2,000 EUR?'),
      'the waiting call in the current details',
    );
    // The turn's summary is the prompt's first line only (the details now show the waiting call's
    // arguments, and the drafted message quotes the whole prompt, so the page as a whole may hold it).
    const summary = await (await ui.client.client.workflow.getHandle(handle.workflowId).describe()).staticSummary();
    expect(summary).toBe('Who must approve a refund above 2,000 EUR?');
    expect(shown).toContain(summary);
    expect(shown).toMatch(/call-3-0 · send_message · expires \S+ · argsDigest [0-9a-f]{64}/);
    expect(shown).toMatch(/call-2-0 · save_draft · reversible_write · success · 1 execution/);
    expect(shown).toContain('web-ui-1');
    await page.screenshot({ path: path.join(OUTPUT, 'awaiting-approval.png'), fullPage: true });
    expect(existsSync(path.join(OUTPUT, 'awaiting-approval.png'))).toBe(true);
    await page.close();

    // The person decides on the call they were shown, naming its digest.
    const waiting = (await ui.client.state(handle.workflowId)).pendingApprovals.find((pending) => pending.callId === 'call-3-0')!;
    await ui.client.deny(handle.workflowId, 'call-3-0', { reason: 'browser test', argsDigest: waiting.argsDigest });
    expect((await ui.client.result(handle.workflowId)).toolCalls.at(-1)).toMatchObject({
      tool: 'send_message',
      status: 'denied',
      executions: 0,
    });
  });
});
