import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTurnSettings, limitsFromConfig } from '../../activities/turn-settings';
import { toMilliseconds } from '../../common/duration';
import { ConfigError, loadConfig, parseConfig, PROJECT_ROOT } from '../../config/load-config';
import { builtInTools } from '../../tools/built-in';
import { defineTool } from '../../tools/define-tool';
import { createToolRegistry } from '../../tools/tool-registry';

function writeConfig(text: string): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-config-')), 'temporal.config.yaml');
  writeFileSync(file, text);
  return file;
}

describe('loadConfig', () => {
  it('loads the shipped temporal.config.yaml with the contract defaults', () => {
    const config = loadConfig({ file: path.join(PROJECT_ROOT, 'temporal.config.yaml'), env: {} });
    expect(config.temporal).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'tollgate' });
    expect(config.temporal.devServer.uiPort).toBe(8233);
    expect(config.model.default).toBe('scripted');
    expect(config.corpus).toBe(path.join(PROJECT_ROOT, 'examples', 'corpus'));
    expect(config.tools.search_local_sources).toMatchObject({ timeout: '10s', maxAttempts: 3 });
  });

  it('fills every default for an empty file', () => {
    const config = loadConfig({ file: writeConfig(''), env: {} });
    expect(config.limits).toEqual({
      maxSteps: 10,
      maxToolCalls: 20,
      errorBudget: 3,
      deadline: 3_600_000,
      maxHistoryEvents: 40_960,
      maxHistoryBytes: 41_943_040,
      maxDepth: 3,
      maxConcurrentSubagents: 4,
      maxHandoffs: 5,
    });
    expect(config.retry).toEqual({ initialInterval: 200, backoffCoefficient: 2, maximumInterval: 5_000 });
  });

  it('names an unknown key and the file', () => {
    const file = writeConfig('temporal:\n  adress: 127.0.0.1:7233\n');
    expect(() => loadConfig({ file, env: {} })).toThrow(ConfigError);
    expect(() => loadConfig({ file, env: {} })).toThrow(`${file}: unknown key "temporal.adress"`);
  });

  it('names the key of a wrong type', () => {
    const file = writeConfig('temporal:\n  devServer:\n    uiPort: "eight"\n');
    expect(() => loadConfig({ file, env: {} })).toThrow(/temporal\.devServer\.uiPort: .*expected number/i);
  });

  it('names a bad duration in a per-tool override', () => {
    expect(() => parseConfig({ tools: { get_document: { timeout: 'soon' } } }, { source: 'x.yaml', baseDir: '/', env: {} })).toThrow(
      /x\.yaml: tools\.get_document\.timeout: /,
    );
  });

  it('reads every duration the way Temporal does: 5 minutes, 300s, 5m and 300000 mean the same in config, tools and turns', () => {
    const timeouts = ['5 minutes', '300s', '5m', 300_000].map((timeout) => {
      const config = parseConfig(
        { tools: { get_document: { timeout } }, limits: { deadline: timeout } },
        { source: 'x.yaml', baseDir: '/', env: {} },
      );
      const registry = createToolRegistry({ tools: builtInTools(config), overrides: config.tools });
      const tool = defineTool({
        name: 'probe',
        description: 'probe',
        input: z.strictObject({}),
        effect: 'read',
        timeout,
        handler: () => 'ok',
      });
      return [registry.get('get_document')!.timeoutMs, limitsFromConfig(config).deadlineMs, tool.timeoutMs, toMilliseconds(timeout)];
    });
    expect(new Set(timeouts.flat())).toEqual(new Set([300_000]));
    expect(toMilliseconds('24h')).toBe(86_400_000);
    expect(toMilliseconds('10 s')).toBe(10_000);
    for (const bad of ['soon', '-1s', '', '10 parsecs']) expect(() => toMilliseconds(bad), bad).toThrow(/is not a duration/);
  });

  it('names an invalid redaction pattern', () => {
    expect(() => parseConfig({ redact: { patterns: ['ok-[a-z]+', '(broken'] } }, { source: 'x.yaml', baseDir: '/', env: {} })).toThrow(
      'x.yaml: redact.patterns.1: not a valid regular expression',
    );
  });

  it('leaves telemetry off by default and names a bad telemetry value', () => {
    expect(parseConfig({}, { source: 'x.yaml', baseDir: '/', env: {} }).telemetry).toEqual({ recordContent: false });
    const parsed = parseConfig(
      { telemetry: { otlp: { endpoint: 'http://127.0.0.1:4318/v1/traces' }, prometheus: { port: 9464 } } },
      { source: 'x.yaml', baseDir: '/', env: {} },
    );
    expect(parsed.telemetry).toEqual({
      otlp: { endpoint: 'http://127.0.0.1:4318/v1/traces', headers: {}, serviceName: 'tollgate-worker' },
      prometheus: { host: '127.0.0.1', port: 9464 },
      recordContent: false,
    });
    expect(() => parseConfig({ telemetry: { otlp: { endpoint: 'collector:4318' } } }, { source: 'x.yaml', baseDir: '/', env: {} })).toThrow(
      /x\.yaml: telemetry\.otlp\.endpoint: expected an http\(s\) URL/,
    );
    expect(() => parseConfig({ telemetry: { prometheus: { port: 70000 } } }, { source: 'x.yaml', baseDir: '/', env: {} })).toThrow(
      /x\.yaml: telemetry\.prometheus\.port/,
    );
    expect(() => parseConfig({ telemetry: { prometheus: {} } }, { source: 'x.yaml', baseDir: '/', env: {} })).toThrow(
      /x\.yaml: telemetry\.prometheus\.port/,
    );
  });

  it('reads outcomes with their defaults into the turn settings, and names a bad onUnknown or resolveTimeout', async () => {
    const source = { source: 'x.yaml', baseDir: '/', env: {} };
    expect(parseConfig({}, source).outcomes).toEqual({ onUnknown: 'ask', resolveTimeout: 86_400_000 });
    const settings = await createTurnSettings(parseConfig({ outcomes: { onUnknown: 'report', resolveTimeout: '2h' } }, source), {})();
    expect(settings.outcomes).toEqual({ onUnknown: 'report', resolveTimeoutMs: 7_200_000 });
    expect(() => parseConfig({ outcomes: { onUnknown: 'guess' } }, source)).toThrow(
      /outcomes\.onUnknown: outcomes\.onUnknown must be "ask" or "report"/,
    );
    expect(() => parseConfig({ outcomes: { resolveTimeout: '0s' } }, source)).toThrow(
      /outcomes\.resolveTimeout: expected a duration longer than 0/,
    );
  });

  it('rejects a default model that the model list lacks', () => {
    expect(() => parseConfig({ model: { default: 'gpt' } }, { source: 'x.yaml', baseDir: '/', env: {} })).toThrow(
      'x.yaml: model.default: "gpt" is not a key of model.models',
    );
  });

  it('lets TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE override the file', () => {
    const file = writeConfig('temporal:\n  address: 127.0.0.1:7233\n  namespace: default\n');
    const config = loadConfig({ file, env: { TEMPORAL_ADDRESS: '127.0.0.1:9999', TEMPORAL_NAMESPACE: 'staging' } });
    expect(config.temporal.address).toBe('127.0.0.1:9999');
    expect(config.temporal.namespace).toBe('staging');
  });

  it('reads the file TOLLGATE_CONFIG names and resolves folders from it', () => {
    const file = writeConfig('workspace: ws\n');
    const config = loadConfig({ env: { TOLLGATE_CONFIG: file } });
    expect(config.workspace).toBe(path.join(path.dirname(file), 'ws'));
  });

  it('says where YAML is broken', () => {
    const file = writeConfig('temporal:\n  address: [unclosed\n');
    expect(() => loadConfig({ file, env: {} })).toThrow(/not valid YAML/);
  });

  it('names a missing file', () => {
    expect(() => loadConfig({ file: '/nonexistent/tollgate.yaml', env: {} })).toThrow('/nonexistent/tollgate.yaml: config file not found');
  });
});
