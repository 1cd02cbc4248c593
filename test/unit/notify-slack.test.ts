// The Slack channel against a real HTTP receiver on loopback standing in for an incoming webhook:
// the Block Kit body as Slack reads it, mrkdwn markup escaped, the URL (the secret) never named.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSendNotification } from '../../activities/send-notification';
import { openSqliteStore } from '../../intents/sqlite-store';
import { configuredChannels } from '../../notify/configured-channels';
import { notifySchema } from '../../notify/notify-config';
import { sampleNotification, sampleRedactor } from '../helpers/notifications';

interface Posted {
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A receiver answering as Slack does (`ok`, or an error status with its text), a Slack channel `team` posting to it, and the activity. */
async function setUp(
  { answer = () => [200, 'ok'] as [number, string], channel = {} } = {} as {
    answer?: (index: number) => [number, string];
    channel?: Record<string, unknown>;
  },
) {
  const posted: Posted[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      posted.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
      const [status, text] = answer(posted.length - 1);
      response.writeHead(status, { 'content-type': 'text/plain' }).end(text);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/services/T000/B000/secret-path-token-9931`;
  const notify = notifySchema.parse({ channels: { team: { type: 'slack', timeout: 1_000, attempts: 2, ...channel } } });
  const store = openSqliteStore(':memory:');
  const send = createSendNotification({
    channels: configuredChannels(notify, { TOLLGATE_SLACK_WEBHOOK_URL: url }),
    store,
    redactor: sampleRedactor('secret-path-token-9931'),
    firstPauseMs: 10,
  });
  return { posted, send, url, close: () => store.close() };
}

type Block = { type: string; text?: { type: string; text: string }; elements?: Array<Record<string, unknown>> };

describe('the Slack channel', () => {
  it('posts a Block Kit message: a header, the fields, a button to the inbox item, and what the link does not do', async () => {
    const { posted, send, close } = await setUp();
    const notification = sampleNotification('team');
    await expect(send({ notification, channel: 'team' })).resolves.toMatchObject({ status: 'sent', attempts: 1 });
    expect(posted).toHaveLength(1);
    const blocks = posted[0].body.blocks as Block[];
    expect(blocks.map((block) => block.type)).toEqual(['header', 'section', 'actions', 'context']);
    expect(blocks[0].text).toEqual({ type: 'plain_text', text: 'Approval needed: send_email (agent support) — task task-7' });
    expect(blocks[1].text!.type).toBe('mrkdwn');
    expect(blocks[1].text!.text).toContain('*Tool:* send_email');
    expect(blocks[1].text!.text).toContain('*Who may decide:* alice, bob');
    expect(blocks[2].elements).toEqual([
      { type: 'button', text: { type: 'plain_text', text: 'Open in the inbox' }, url: notification.link, action_id: 'open_item' },
    ]);
    expect(JSON.stringify(blocks[3])).toContain('Following the link decides nothing');
    expect(posted[0].body.text).toContain('Approval needed: send_email');
    expect(JSON.stringify(posted[0].body)).not.toContain('customer@example.com');
    await close();
  });

  it('escapes what Slack reads as markup (mentions, links) and shows hidden characters as marks; arguments only where asked', async () => {
    const { posted, send, close } = await setUp({ channel: { arguments: true } });
    const notification = sampleNotification('team', {
      tool: '<!channel> <https://evil.example|click here>',
      agent: 'support\u202E\u200B',
      arguments: { note: '```<!here>```', token: 'xoxb-1234567890-abcdefghij' },
    });
    await expect(send({ notification, channel: 'team' })).resolves.toMatchObject({ status: 'sent' });
    const body = JSON.stringify(posted[0].body);
    expect(body).not.toContain('<!channel>');
    expect(body).not.toContain('<!here>');
    expect(body).not.toContain('<https://evil.example');
    expect(body).toContain('&lt;!channel&gt;');
    expect(body).not.toMatch(/[\u202E\u200B]/u);
    expect(body).toContain('support\\\\u{202E}\\\\u{200B}');
    const blocks = posted[0].body.blocks as Block[];
    const argumentsBlock = blocks.find((block) => block.text?.text.startsWith('*Arguments (redacted):*'));
    expect(argumentsBlock).toBeDefined();
    // The arguments' backticks cannot close the code block early, and the Slack token in them is redacted.
    expect(argumentsBlock!.text!.text.match(/```/g)).toHaveLength(2);
    expect(body).not.toContain('xoxb-1234567890-abcdefghij');
    await close();
  });

  it("retries a 429 or 5xx, stops at Slack's refusals (404 no_service), and never names the webhook's URL", async () => {
    const limited = await setUp({ answer: (index) => (index === 0 ? [429, 'rate_limited'] : [200, 'ok']) });
    await expect(limited.send({ notification: sampleNotification('team'), channel: 'team' })).resolves.toMatchObject({
      status: 'sent',
      attempts: 2,
    });
    await limited.close();
    const gone = await setUp({ answer: () => [404, 'no_service'] });
    const receipt = await gone.send({ notification: sampleNotification('team'), channel: 'team' });
    expect(receipt).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receipt.error).toBe('slack channel "team": Slack webhook "team" answered 404: no_service');
    expect(receipt.error).not.toContain('secret-path-token');
    await gone.close();
  });

  it('stops the worker start naming the channel and the variable when the URL is missing', () => {
    const notify = notifySchema.parse({ channels: { 'team-slack': { type: 'slack' } } });
    expect(() => configuredChannels(notify, {})).toThrow(
      'approvals.notify.channels.team-slack.urlEnv: the environment variable TOLLGATE_SLACK_WEBHOOK_URL is not set',
    );
  });
});
