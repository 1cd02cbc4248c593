import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../config/config-error';
import { createToolRegistry } from '../../tools/tool-registry';
import { openToolSources, ToolSourceError, type ToolSource } from '../../tools/tool-source';
import { configuredToolSources } from '../../tools/tool-sources';
import { staticNotesSource } from '../helpers/static-tool-source';
import { testConfig } from '../helpers/test-config';

const quiet = () => undefined;
const signal = new AbortController().signal;

describe('openToolSources', () => {
  it('opens a source of its own with its section defaults, and its tools go into the registry like any other', async () => {
    const { source, record } = staticNotesSource('notes', { a: 'refunds take 5 days' });
    const opened = await openToolSources([source], { config: testConfig(), log: quiet });
    const registry = createToolRegistry({ tools: opened.tools });
    expect(registry.policy('notes__read')).toMatchObject({ effect: 'read' });
    const answer = await registry.get('notes__read')!.handler({ id: 'a' }, { taskId: 't', callId: 'c', attempt: 1, signal });
    expect(answer).toBe('note: refunds take 5 days');
    await opened.close();
    expect(record.events).toEqual(['open notes', 'close notes']);
  });

  it('gives several sources their tools together and closes them in the reverse order', async () => {
    const first = staticNotesSource('first', {});
    const second = staticNotesSource('second', {});
    const opened = await openToolSources([first.source, second.source], { config: testConfig(), log: quiet });
    expect(opened.tools.map((tool) => tool.name)).toEqual(['first__read', 'second__read']);
    await opened.close();
    expect(first.record.events).toEqual(['open first', 'close first']);
    expect(second.record.events).toEqual(['open second', 'close second']);
  });

  it('names a source that cannot open and the cause in one line, and closes the ones that opened', async () => {
    const fine = staticNotesSource('fine', {});
    const broken = staticNotesSource('broken', {}, { failure: new Error('the notes database is not reachable\n    at somewhere') });
    const opening = openToolSources([fine.source, broken.source], { config: testConfig(), log: quiet });
    await expect(opening).rejects.toThrow(ToolSourceError);
    await expect(opening).rejects.toThrow(/^tool source "broken" could not open: the notes database is not reachable$/);
    expect(fine.record.events).toEqual(['open fine', 'close fine']);
  });

  it('keeps the message of a source that names itself (a ToolSourceError or a ConfigError)', async () => {
    const own = staticNotesSource('own', {}, { failure: new ToolSourceError('notes server "x" could not start: gone') });
    await expect(openToolSources([own.source], { config: testConfig(), log: quiet })).rejects.toThrow(
      /^notes server "x" could not start: gone$/,
    );
    const config = staticNotesSource('config', {}, { failure: new ConfigError('notes.prefix: expected a string') });
    await expect(openToolSources([config.source], { config: testConfig(), log: quiet })).rejects.toThrow(ConfigError);
  });

  it('refuses a section of a source that cannot be left out of the config, naming its key', async () => {
    const needy: ToolSource<{ url: string }> = {
      name: 'needy',
      section: { key: 'needy', schema: z.strictObject({ url: z.string() }) },
      open: async () => ({ tools: [], close: async () => undefined }),
    };
    await expect(openToolSources([needy], { config: testConfig(), log: quiet })).rejects.toThrow(
      'config needy: the section has keys without a default, so it cannot be left out',
    );
  });
});

describe('configuredToolSources', () => {
  it('is the MCP servers and the OpenAPI sources of the config: none configured, no tools', async () => {
    const sources = configuredToolSources();
    expect(sources.map((source) => [source.name, source.section?.key])).toEqual([
      ['mcp', 'mcp'],
      ['openapi', 'openapi'],
    ]);
    const opened = await openToolSources(sources, { config: testConfig(), log: quiet });
    expect(opened.tools).toEqual([]);
    await opened.close();
  });
});
