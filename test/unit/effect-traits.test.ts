// What an effect level means is one record (common/effects.ts) that every layer reads: these tests hold
// each layer to it, and ask the compiler itself which files a new effect level must touch.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TOOL_EFFECTS, type ToolEffect } from '../../common/codes';
import { EFFECT_TRAITS, EFFECTS_WITHOUT_STATUS_CHECK, effectsWhere, isWriteEffect } from '../../common/effects';
import { claimDecision, checkClaimRequest, type IntentRow } from '../../intents/intent-store';
import { mcpToolOverrideSchema } from '../../tools/mcp/mcp-config';
import { defineTool, type ToolDefinition } from '../../tools/define-tool';
import { createToolRegistry } from '../../tools/tool-registry';

const ROOT = path.join(__dirname, '..', '..');
const handler = () => 'done';
const status = () => 'not_applied' as const;

/** One tool of each effect level, declared as its traits allow. */
function toolOf(effect: ToolEffect): ToolDefinition {
  const base = { name: `tool_${effect}`, description: effect, input: z.object({}), handler };
  switch (effect) {
    case 'read':
      return defineTool({ ...base, effect });
    case 'reversible_write':
      return defineTool({ ...base, effect, status });
    case 'irreversible_write':
      return defineTool({ ...base, effect });
  }
}

function startedRow(effect: string | null): IntentRow {
  return {
    key: 'k',
    task_id: 't',
    tool: 'x',
    call_id: 'c1',
    state: 'started',
    receipt: null,
    started_at: new Date(0).toISOString(),
    committed_at: null,
    effect,
    args_digest: 'd',
    owner: 'someone',
    lease_until: 1,
  };
}

describe('EFFECT_TRAITS', () => {
  it('has one entry per effect level, in TOOL_EFFECTS order', () => {
    expect(Object.keys(EFFECT_TRAITS)).toEqual([...TOOL_EFFECTS]);
  });

  it('says the writes are the effects recorded as intents, and only a write is retried by anything but Temporal within a bound', () => {
    expect(effectsWhere((traits) => traits.claimsIntent)).toEqual(['reversible_write', 'irreversible_write']);
    expect(effectsWhere((traits) => traits.retry === 'bounded')).toEqual(['read']);
    expect(effectsWhere((traits) => traits.needsApproval)).toEqual(['irreversible_write']);
    expect(isWriteEffect('read')).toBe(false);
    expect(isWriteEffect('irreversible_write')).toBe(true);
    expect(isWriteEffect('toString')).toBe(false);
    expect(isWriteEffect(undefined)).toBe(false);
  });

  it('decides which started intent another call may take over once its lease ran out (leaseTakeover), in both stores alike', () => {
    for (const effect of TOOL_EFFECTS.filter(isWriteEffect)) {
      const decision = claimDecision(startedRow(effect), { ...request(effect), owner: 'another' }, 10);
      expect(decision).toBe(EFFECT_TRAITS[effect].leaseTakeover ? 'take_over' : 'refuse');
    }
    // A row from before effects were recorded is never taken over.
    expect(claimDecision(startedRow(null), request('reversible_write'), 10)).toBe('refuse');
  });

  it('lets a claim name only an effect recorded as intents', () => {
    expect(() => checkClaimRequest(request('read' as never))).toThrow(
      'claim: effect must be one of the effects recorded as intents (reversible_write, irreversible_write), got "read"',
    );
  });

  it('gives the schedule-to-start bound to the effects whose traits carry it, in the policy the workflow reads', () => {
    const registry = createToolRegistry({ tools: TOOL_EFFECTS.map(toolOf), approvedScheduleToStartMs: 45_000 });
    for (const effect of TOOL_EFFECTS) {
      const policy = registry.policy(`tool_${effect}`)!;
      expect(policy.scheduleToStartMs).toBe(EFFECT_TRAITS[effect].scheduleToStartBound ? 45_000 : undefined);
    }
  });

  it('lets an MCP tool (which has no status check) take only an effect that needs none', () => {
    expect(EFFECTS_WITHOUT_STATUS_CHECK).toEqual(['read', 'irreversible_write']);
    expect(mcpToolOverrideSchema.safeParse({ effect: 'read' }).success).toBe(true);
    expect(mcpToolOverrideSchema.safeParse({ effect: 'reversible_write' }).success).toBe(false);
  });

  it('refuses at run time what a definition built field by field got wrong (the compiler checks defineTool)', () => {
    const read = toolOf('read');
    const broken = { ...toolOf('reversible_write'), status: undefined } as unknown as ToolDefinition;
    expect(() => createToolRegistry({ tools: [read, broken] })).toThrow(
      'tool tool_reversible_write: a reversible_write needs a status lookup',
    );
  });
});

function request(effect: 'reversible_write' | 'irreversible_write') {
  return { key: 'k', taskId: 't', tool: 'x', callId: 'c2', argsDigest: 'd', effect, leaseMs: 1_000 };
}

/** The library's files that read the effect traits or name the effect levels one by one (and, through their imports, what they use). */
function traitReaders(): string[] {
  const folders = ['common', 'workflows', 'activities', 'intents', 'tools', 'worker', 'client', 'config', 'hardened', 'connection'];
  return folders.flatMap((folder) =>
    readdirSync(path.join(ROOT, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => path.join(entry.parentPath, entry.name))
      .filter((file) => /common\/effects'|EFFECT_STRATEGIES|ToolEffect\b/.test(readFileSync(file, 'utf8'))),
  );
}

/** The readers, listed once for the stages that check them all. */
const ALL_READERS = traitReaders();

/** The last program checked: the next one reuses the files neither changed (type-checking the library once, not three times). */
let previous: ts.Program | undefined;

/** Type-checks the files that read the effect levels, with some files' text replaced; returns those the compiler finds errors in. */
function filesWithErrors(replaced: Record<string, (text: string) => string>, roots: string[] = ALL_READERS): string[] {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    esModuleInterop: true,
    skipLibCheck: true,
    resolveJsonModule: true,
    noEmit: true,
    types: ['node'],
  };
  const texts = new Map(
    Object.entries(replaced).map(([file, replace]) => {
      const full = path.join(ROOT, file);
      const before = readFileSync(full, 'utf8');
      const after = replace(before);
      expect(after, `the replacement in ${file}`).not.toBe(before);
      return [full, after];
    }),
  );
  const host = ts.createCompilerHost(options);
  const readSource = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, language, onError, create) => {
    const text = texts.get(path.resolve(fileName));
    return text === undefined ? readSource(fileName, language, onError, create) : ts.createSourceFile(fileName, text, language);
  };
  const readers = roots;
  const program = ts.createProgram(readers, options, host, roots === ALL_READERS ? previous : undefined);
  if (roots === ALL_READERS) previous = program;
  // The readers' own diagnostics: the checker then checks only what they use, not every file they reach.
  const files = readers
    .flatMap((file) => program.getSemanticDiagnostics(program.getSourceFile(file)))
    .filter((diagnostic) => diagnostic.file !== undefined)
    .map((diagnostic) => path.relative(ROOT, diagnostic.file!.fileName).split(path.sep).join('/'));
  return [...new Set(files)].sort();
}

// The steps of docs/architecture.md's "Adding an effect level", one at a time.
const newLevel = {
  'common/codes.ts': (text: string) =>
    text
      .replace("| 'irreversible_write';", "| 'irreversible_write' | 'append_only';")
      .replace("'irreversible_write'];", "'irreversible_write', 'append_only'];"),
};
const itsTraits = {
  'common/effects.ts': (text: string) =>
    text.replace(
      '} as const satisfies Record<ToolEffect, EffectTraits>;',
      `  append_only: {
    label: 'append-only write',
    retry: 'never',
    statusCheck: 'optional',
    claimsIntent: true,
    needsApproval: false,
    leaseTakeover: false,
    receiptRechecked: false,
    scheduleToStartBound: false,
    concurrentInStep: false,
  },
} as const satisfies Record<ToolEffect, EffectTraits>;`,
    ),
};
const itsStrategyAndExecutor = {
  'workflows/effects/index.ts': (text: string) => text.replace('  irreversible_write: writeStrategy,', '$&\n  append_only: writeStrategy,'),
  'activities/boundary/run-tool.ts': (text: string) => text.replace('    irreversible_write: runWrite,', '$&\n    append_only: runWrite,'),
};

describe('a new effect level', () => {
  it('does not compile until it has its traits, then its workflow strategy and its boundary executor, and then does', () => {
    // Without traits, the record itself does not compile (checked on its own: its readers fail with it).
    expect(filesWithErrors(newLevel, [path.join(ROOT, 'common', 'effects.ts')])).toEqual(['common/effects.ts']);
    // With its traits, the compiler names exactly the strategy and the executor it still needs.
    expect(filesWithErrors({ ...newLevel, ...itsTraits })).toEqual(['activities/boundary/run-tool.ts', 'workflows/effects/index.ts']);
    expect(filesWithErrors({ ...newLevel, ...itsTraits, ...itsStrategyAndExecutor })).toEqual([]);
  }, 120_000);
});
