import { toMilliseconds } from '../common/duration';
import { ConfigError } from '../config/config-error';
import { channelSecret } from './channel-secrets';
import type { NotificationChannel } from './notification-channel';
import { messageRows, type NotificationMessage } from './notification-message';
import type { SlackChannelConfig } from './notify-config';
import { postJson } from './post-json';

/** Slack's own bounds: a header's text, a section's, a button's URL. */
const SLACK_LIMITS = { header: 150, section: 3_000, url: 3_000 } as const;

/** Text for Slack's mrkdwn: the three characters it reads as markup (links, mentions) escaped, as Slack asks. */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Cut to `max` characters, with `…` where cut. */
function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The Block Kit message of one notification: a header, the fields, the inbox link as a button, and what the link does not do. */
export function slackPayload(message: NotificationMessage): Record<string, unknown> {
  const rows = messageRows(message.fields)
    .map(([label, value]) => `*${slackEscape(label)}:* ${slackEscape(value)}`)
    .join('\n');
  const blocks: Array<Record<string, unknown>> = [
    // Escaped in plain text too: Slack asks for &, < and > as entities in every text it shows.
    {
      type: 'header',
      text: { type: 'plain_text', text: bounded(slackEscape(message.subject.replace(/^\[Tollgate\] /, '')), SLACK_LIMITS.header) },
    },
    { type: 'section', text: { type: 'mrkdwn', text: bounded(rows, SLACK_LIMITS.section) } },
  ];
  if (message.fields.arguments !== undefined) {
    const cut = message.fields.argumentsCut ? `\n… ${message.fields.argumentsCut} characters more, not sent` : '';
    // Inside a code block Slack shows the text as it is; the backticks of the arguments cannot close it early once escaped.
    const code = slackEscape(message.fields.arguments).replace(/`/g, 'ˋ');
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: bounded(`*Arguments (redacted):*\n\`\`\`${code}\`\`\`${cut}`, SLACK_LIMITS.section) },
    });
  }
  blocks.push(
    {
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in the inbox' }, url: message.link, action_id: 'open_item' }],
    },
    {
      type: 'context',
      elements: [
        { type: 'mrkdwn', text: 'Following the link decides nothing: it opens the item, where you sign in and sign your decision.' },
      ],
    },
  );
  return { text: slackEscape(message.subject), blocks };
}

/**
 * A Slack incoming webhook: a Block Kit message with the inbox link. The webhook's URL is the
 * secret and is read from `urlEnv` now: a missing one stops the worker at start, naming it. Slack
 * has no delivery id, so a message sent twice (a worker lost between the delivery and its record)
 * shows twice; the other channels' receivers drop the duplicate by id.
 */
export function slackChannel(name: string, config: SlackChannelConfig, env: NodeJS.ProcessEnv): NotificationChannel {
  const url = channelSecret({ channel: name, key: 'urlEnv', variable: config.urlEnv, holds: "the Slack incoming webhook's URL", env });
  if (!/^https?:\/\/\S+$/.test(url))
    throw new ConfigError(`approvals.notify.channels.${name}.urlEnv: ${config.urlEnv} does not hold an http(s) URL`);
  return {
    name,
    type: 'slack',
    carriesArguments: config.arguments,
    attempts: config.attempts,
    timeoutMs: toMilliseconds(config.timeout),
    async send(message, { signal }) {
      if (message.link.length > SLACK_LIMITS.url) throw new Error(`the link is longer than Slack takes (${SLACK_LIMITS.url})`);
      await postJson({ url, body: JSON.stringify(slackPayload(message)), headers: {}, signal, receiver: `Slack webhook "${name}"` });
    },
  };
}
