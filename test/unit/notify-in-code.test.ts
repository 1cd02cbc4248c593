import { describe, expect, it } from 'vitest';
import { createTurnSettings } from '../../activities/turn-settings';
import { withNotifyInCode } from '../../worker/notify-in-code';
import { testConfig } from '../helpers/test-config';

const env = { TOLLGATE_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
const config = testConfig({
  approvals: {
    notify: {
      channels: { 'ops-hook': { type: 'webhook', url: 'https://hooks.example.com/a' } },
      groups: { finance: ['carol'] },
      routes: [{ groups: ['finance'], channels: ['ops-hook'] }],
    },
  },
  inbox: { host: '127.0.0.1', port: 8300 },
});

describe('withNotifyInCode', () => {
  it('adds channels, groups and routes given in code; the routes in code come first, with their timers in the turn settings', async () => {
    const merged = withNotifyInCode(config, {
      channels: { 'team-hook': { type: 'webhook', url: 'https://hooks.example.com/b' } },
      groups: { ops: ['erin'] },
      routes: [{ tools: ['send_*'], channels: ['team-hook', 'ops-hook'], remindAfter: '30m', escalateAfter: '2h', escalateTo: 'finance' }],
    });
    expect(Object.keys(merged.approvals.notify.channels)).toEqual(['ops-hook', 'team-hook']);
    const settings = await createTurnSettings(merged, env)();
    expect(settings.approvals.notify).toMatchObject({
      inboxUrl: 'http://localhost:8300',
      groups: { finance: ['carol'], ops: ['erin'] },
      routes: [
        {
          tools: ['send_*'],
          channels: ['team-hook', 'ops-hook'],
          remindAfterMs: 1_800_000,
          escalateAfterMs: 7_200_000,
          escalateTo: 'finance',
        },
        { groups: ['finance'], channels: ['ops-hook'] },
      ],
    });
    // Two default webhook channels: 3 attempts of 10 s and pauses of 0.5 and 1 s, and 5 s of room.
    expect(settings.approvals.notify!.sendBoundMs).toBe(3 * 10_000 + 1_500 + 5_000);
  });

  it('refuses a channel or group named in both, and a route naming a channel or group nobody declared, naming where', () => {
    expect(() => withNotifyInCode(config, { channels: { 'ops-hook': { type: 'slack' } } })).toThrow(
      'createWorker({ notify }): channels ops-hook also in the config',
    );
    expect(() => withNotifyInCode(config, { groups: { finance: ['dave'] } })).toThrow('groups finance also in the config');
    expect(() => withNotifyInCode(config, { routes: [{ channels: ['nowhere'] }] })).toThrow(
      /^createWorker\(\{ notify \}\): .*no channel "nowhere" in approvals\.notify\.channels/,
    );
    expect(() => withNotifyInCode(config, { routes: [{ channels: ['ops-hook'], escalateAfter: '1h', escalateTo: 'legal' }] })).toThrow(
      /no group "legal"/,
    );
  });

  it('leaves the config as it is without notify, and turns without routes get no notify settings', async () => {
    const plain = testConfig();
    expect(withNotifyInCode(plain, undefined)).toBe(plain);
    expect((await createTurnSettings(plain, env)()).approvals.notify).toBeUndefined();
  });
});
