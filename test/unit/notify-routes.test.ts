import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NotifySettings } from '../../common/contract/notifications';
import { notificationId } from '../../common/notification-id';
import { inboxItemLink, routesFor } from '../../common/notify-routes';
import { sha256Hex } from '../../common/sha256-hex';

const settings: NotifySettings = {
  inboxUrl: 'https://inbox.example.com/',
  groups: { finance: ['carol', 'dave'], ops: ['erin'] },
  routes: [
    { tools: ['send_*'], channels: ['ops-mail'], remindAfterMs: 1_800_000 },
    { agents: ['support'], channels: ['audit-hook'] },
    { groups: ['finance'], channels: ['team-slack'] },
  ],
};

describe('sha256Hex', () => {
  it('equals node:crypto on texts across the padding boundaries and on multi-byte characters', () => {
    for (const text of [
      '',
      'abc',
      'a'.repeat(55),
      'a'.repeat(56),
      'a'.repeat(63),
      'a'.repeat(64),
      'a'.repeat(1000),
      'h\u00e9llo \u{1D11E}\u202E'.repeat(40),
    ]) {
      expect(sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    }
  });
});

describe('notificationId', () => {
  const parts = { workflowId: 'turn-1', callId: 'call-0-0', waitKind: 'approval', round: 1, channel: 'ops-mail', notice: 0 };
  it('differs for every part of the wait, the channel and the notice, and is the same for the same parts', () => {
    const ids = new Set([
      notificationId(parts),
      notificationId({ ...parts, workflowId: 'turn-2' }),
      notificationId({ ...parts, callId: 'call-0-1' }),
      notificationId({ ...parts, waitKind: 'resolution' }),
      notificationId({ ...parts, round: 2 }),
      notificationId({ ...parts, channel: 'team-slack' }),
      notificationId({ ...parts, notice: 1 }),
    ]);
    expect(ids.size).toBe(7);
    expect(notificationId({ ...parts })).toBe(notificationId(parts));
    expect(notificationId(parts)).toMatch(/^[0-9a-f]{64}$/);
  });
  it('cannot be made equal by moving text from one field into the next', () => {
    expect(notificationId({ ...parts, workflowId: 'turn-1c', callId: 'all-0-0' })).not.toBe(
      notificationId({ ...parts, workflowId: 'turn-1', callId: 'call-0-0' }),
    );
  });
});

describe('routesFor', () => {
  it('matches by tool pattern, by agent and by a decider in a named group; a list left out matches any', () => {
    const channels = (subject: Parameters<typeof routesFor>[1]) => routesFor(settings, subject).flatMap((route) => route.channels);
    expect(channels({ tool: 'send_email', deciders: [] })).toEqual(['ops-mail']);
    expect(channels({ tool: 'pay_invoice', agent: 'support', deciders: [] })).toEqual(['audit-hook']);
    expect(channels({ tool: 'pay_invoice', deciders: ['alice', 'dave'] })).toEqual(['team-slack']);
    expect(channels({ tool: 'send_email', agent: 'support', deciders: ['carol'] })).toEqual(['ops-mail', 'audit-hook', 'team-slack']);
    expect(channels({ tool: 'pay_invoice', agent: 'billing', deciders: ['erin'] })).toEqual([]);
    expect(routesFor(undefined, { tool: 'send_email', deciders: [] })).toEqual([]);
    expect(routesFor({ inboxUrl: 'x', routes: [{ channels: ['all'] }] }, { tool: 'anything', deciders: [] })).toHaveLength(1);
  });
});

describe('inboxItemLink', () => {
  it('links the item under the inbox address, its ids encoded so none can leave the fragment', () => {
    expect(inboxItemLink(settings.inboxUrl, 'turn-1', 'call-0-0')).toBe('https://inbox.example.com/#/item/turn-1/call-0-0');
    expect(inboxItemLink('http://localhost:8234', 'turn/a b?#', 'resume:2')).toBe(
      'http://localhost:8234/#/item/turn%2Fa%20b%3F%23/resume%3A2',
    );
  });
});
