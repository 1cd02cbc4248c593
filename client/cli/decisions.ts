// The decision commands: the inbox of what waits for a person, and approve, deny, resolve and resume.
import { Argument, type Command } from 'commander';
import type { GrantRequest, PendingResolution, WaitLineage } from '../../common/contract/decisions';
import { displayValue, hiddenWarning } from '../../common/display-text';
import { parseDuration } from '../../common/duration';
import { grantRequestProblem } from '../../common/grant-request';
import { decisionDigest, describeApproval, SHOWN_ARGS_CHARS } from '../follow-turn';
import { formatTable } from '../format-table';
import { describeNotices } from '../notices-text';
import { forTerminal } from '../terminal-text';
import type { InboxEntry } from '../tollgate-client';
import { loadConfig } from '../../config/load-config';
import { TollgateClient } from '../tollgate-client';
import { CliError, json, print, withClient } from './context';

/** The inbox as text: the calls waiting for approval, then the model steps waiting for a resume decision. */
function describeInbox(entries: InboxEntry[]): string {
  if (entries.length === 0) return 'Nothing waits for a person.';
  const calls = entries.filter((entry) => entry.kind === 'approval' || entry.kind === 'resolution');
  const resumes = entries.filter((entry) => entry.kind === 'resume');
  const lines: string[] = [];
  if (calls.length > 0) {
    lines.push(
      formatTable(
        ['workflow', 'task', 'call', 'tool', 'waits for', 'expires'],
        calls.map((entry) =>
          [entry.workflowId, entry.taskId, entry.callId, entry.tool, entry.kind, entry.expiresAt].map((cell) => forTerminal(cell)),
        ),
      ),
      ...calls.map((entry) =>
        [
          entry.kind === 'approval'
            ? `\n${forTerminal(entry.workflowId)} ${describeApproval(entry).text}`
            : `\n${forTerminal(entry.workflowId)} ${describeResolution(entry)}`,
          ...describeLineage(entry.lineage),
          ...describeNotices(entry),
        ].join('\n'),
      ),
    );
  }
  if (resumes.length > 0) {
    if (lines.length > 0) lines.push('');
    lines.push(
      'Model streams cut off after chunks went out (`tollgate resume <workflow>` asks the model again, `--stop` stops the turn):',
      formatTable(
        ['workflow', 'task', 'step', 'chunks', 'stops at'],
        resumes.map((entry) =>
          [entry.workflowId, entry.taskId, String(entry.step + 1), String(entry.chunks), entry.expiresAt].map((cell) => forTerminal(cell)),
        ),
      ),
      ...resumes.filter((entry) => entry.lineage).flatMap((entry) => [forTerminal(entry.workflowId), ...describeLineage(entry.lineage)]),
    );
  }
  return lines.join('\n');
}

/**
 * Where a subagent's wait stands, as the inbox shows it under the entry: the path of agents from the
 * root's, the root turn, and what the parent asked; no lines for a root turn's wait. The decision goes
 * to the entry's own workflow, the subagent's turn.
 */
export function describeLineage(lineage: WaitLineage | undefined): string[] {
  if (!lineage) return [];
  const request = forTerminal(lineage.request).split('\n');
  const path = lineage.path.map((agent) => forTerminal(String(agent))).join(' → ');
  return [
    `  subagent ${path} (depth ${forTerminal(String(lineage.depth))}) below the root turn ${forTerminal(lineage.rootWorkflowId)}`,
    `  its parent ${forTerminal(lineage.parentWorkflowId)} asked (call ${forTerminal(lineage.parentCallId)}): ${request[0]}`,
    ...request.slice(1).map((line) => `    ${line}`),
  ];
}

/** A write waiting for a resolution, as the inbox shows it: why, its arguments, and the command that resolves it. */
export function describeResolution(entry: PendingResolution & { workflowId: string }): string {
  return [
    `${forTerminal(entry.callId)} ${forTerminal(entry.tool)}: outcome unknown (${forTerminal(entry.reason)})`,
    ...forTerminal(JSON.stringify(entry.args, null, 2) ?? 'undefined')
      .split('\n')
      .map((line) => `  ${line}`),
    forTerminal(`  argsDigest ${entry.shownDigest ?? entry.argsDigest}`),
    ...[hiddenWarning(displayValue(entry.args).hidden)].filter((line) => line !== undefined).map((line) => `  ${line}`),
    `  tollgate resolve ${forTerminal(entry.workflowId)} ${forTerminal(entry.callId)} applied|not_applied [--note <text>]`,
  ].join('\n');
}

/** The edited arguments of `approve --args`: JSON, or a clear error naming the option. */
function editedArguments(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError(`--args must be the edited arguments as JSON: ${(error as Error).message}`);
  }
}

/** The grant of `approve --grant-for …`, checked here so a mistake is named before anything is sent. */
function grantOption(options: { grantFor?: string; grantWhen?: string; grantScope?: string; grantMax?: string }): GrantRequest | undefined {
  const { grantFor, grantWhen, grantScope, grantMax } = options;
  if (grantFor === undefined) {
    if (grantWhen !== undefined || grantScope !== undefined || grantMax !== undefined)
      throw new CliError('--grant-when, --grant-scope and --grant-max go with --grant-for <duration>');
    return undefined;
  }
  const forMs = parseDuration(grantFor);
  if (forMs === undefined) throw new CliError(`--grant-for must be a duration (1h, 30m, 90s), got "${grantFor}"`);
  let when: Record<string, unknown> | undefined;
  if (grantWhen !== undefined) {
    try {
      when = JSON.parse(grantWhen) as Record<string, unknown>;
    } catch (error) {
      throw new CliError(`--grant-when must be a JSON Schema as JSON: ${(error as Error).message}`);
    }
  }
  const grant: GrantRequest = {
    forMs,
    ...(when !== undefined ? { when } : {}),
    ...(grantScope !== undefined ? { scope: grantScope as GrantRequest['scope'] } : {}),
    ...(grantMax !== undefined ? { maxCalls: Number(grantMax) } : {}),
  };
  const problem = grantRequestProblem(grant);
  if (problem) throw new CliError(problem.replace(/^grant\.forMs/, '--grant-for').replace(/^grant\./, '--grant-'));
  return grant;
}

/** `inbox`, `resume`, `resolve`, `approve` and `deny`, in that order. */
export function registerDecisionCommands(program: Command): void {
  program
    .command('inbox')
    .description(
      'everything waiting for a person, across all turns: calls waiting for approval, writes waiting for a resolution, model streams waiting for a resume decision',
    )
    .option(
      '--web',
      'serve the web inbox, where people sign in with a passkey and decide with a key their browser holds (docs/approvals.md)',
    )
    .option('--port <port>', 'with --web: the port to listen on (config inbox.port, default 8234)')
    .option('--host <host>', 'with --web: the address to listen on (config inbox.host, default 127.0.0.1)')
    .option('--enroll <approver...>', 'with --web: print a one-time link with which each named approver enrolls a passkey')
    .action(async (options: { web?: boolean; port?: string; host?: string; enroll?: string[] }) => {
      if (!options.web) {
        if (options.port || options.host || options.enroll) throw new CliError('--port, --host and --enroll go with --web');
        const entries = await withClient((client) => client.inbox());
        print(entries, () => describeInbox(entries));
        return;
      }
      await serveWebInbox(options);
    });

  program
    .command('resume')
    .description('decide on a model stream cut off after chunks went out: ask the model again for that step, or stop the turn')
    .argument('<workflowId>')
    .option('--stop', 'stop the turn (model_failed, stream_interrupted) instead of asking the model again')
    .option('--by <name>', 'who decides, for the record (default: the login name)')
    .action(async (workflowId: string, options: { stop?: boolean; by?: string }) => {
      const receipt = await withClient(async (client) => {
        const pending = (await client.state(workflowId)).pendingResume;
        if (!pending) throw new CliError(`rejected: no model step of ${workflowId} waits for a resume decision`);
        if (!json())
          console.log(
            `Step ${pending.step + 1} broke after ${pending.chunks} chunks; it had streamed:\n${forTerminal(pending.partialText)}`,
          );
        const by = options.by ?? process.env.USER;
        return client.resume(workflowId, { step: pending.step, decision: options.stop ? 'stop' : 'retry', ...(by ? { by } : {}) });
      });
      print(receipt, () =>
        receipt.decision === 'retry'
          ? `Step ${receipt.step + 1} of ${workflowId} is asked again.`
          : `Stopped ${workflowId} at step ${receipt.step + 1}.`,
      );
    });

  program
    .command('resolve')
    .description('say whether a write whose outcome is unknown took effect: applied settles it, not_applied lets it run again')
    .argument('<workflowId>')
    .argument('<callId>')
    .addArgument(new Argument('<outcome>', 'applied or not_applied').choices(['applied', 'not_applied']))
    .option('--note <text>', 'what you checked, for the record and the model')
    .option('--resolver <name>', "who resolves (default: the login name; with approvals.privateKeyEnv, the signing key's name)")
    .option('--args-digest <sha256>', 'the digest of the arguments you saw; without it, the call is shown and its digest is sent')
    .action(async (workflowId: string, callId: string, outcome: 'applied' | 'not_applied', options) => {
      const receipt = await withClient(async (client) => {
        let digest: string | undefined = options.argsDigest;
        if (!digest) {
          const pending = (await client.state(workflowId)).pendingResolutions?.find((entry) => entry.callId === callId);
          if (!pending) throw new CliError(`rejected: no call ${callId} of ${workflowId} waits for a resolution`);
          if (!json()) console.log(describeResolution({ workflowId, ...pending }));
          digest = pending.shownDigest ?? pending.argsDigest;
        }
        const resolver = options.resolver ?? (client.signingKeyId ? undefined : process.env.USER);
        return client.resolve(workflowId, callId, outcome, { resolver, note: options.note, argsDigest: digest });
      });
      print(receipt, () => `Resolved ${receipt.callId} of ${workflowId} as ${receipt.outcome}.`);
    });

  for (const decision of ['approve', 'deny'] as const) {
    const command = program.command(decision);
    if (decision === 'approve') {
      command
        .option(
          '--args <json>',
          "run the call with these arguments instead (edited); checked like the model's call, with their own idempotency key",
        )
        .option('--grant-for <duration>', 'also approve later calls of this tool in this task for this long (1h, 30m; at most 30 days)')
        .option('--grant-when <json>', "with --grant-for: a JSON Schema the later calls' arguments must match (default: any)")
        .option('--grant-scope <scope>', 'with --grant-for: task (default) or conversation')
        .option('--grant-max <calls>', 'with --grant-for: approve at most this many later calls');
    }
    command
      .description(decision === 'approve' ? 'approve one call; it then runs exactly once' : 'deny one call; it never runs')
      .argument('<workflowId>')
      .argument('<callId>')
      .option('--reason <text>', 'why, for the record')
      .option('--approver <name>', "who decides (default: the login name; with approvals.privateKeyEnv, the signing key's name)")
      .option(
        '--args-digest <sha256>',
        'the digest of the arguments you saw; without it, the call is shown and the digest of what is shown is sent',
      )
      .option('--all', `show the whole arguments, however long (without it, at most ${SHOWN_ARGS_CHARS} characters are shown)`)
      .action(async (workflowId: string, callId: string, options) => {
        const args = editedArguments(options.args);
        const grant = grantOption(options);
        const receipt = await withClient(async (client) => {
          let digest: string | undefined = options.argsDigest;
          if (!digest) {
            // Nothing is approved that was not shown: with --json nothing is, so the approver names the digest they checked.
            if (json() && decision === 'approve') {
              throw new CliError(`rejected: with --json no arguments are shown to approve from; pass --args-digest of what you checked`);
            }
            const pending = (await client.state(workflowId)).pendingApprovals.find((entry) => entry.callId === callId);
            if (!pending) throw new CliError(`rejected: no call ${callId} waits for approval`);
            const shown = describeApproval(pending, options.all ? { maxArgsChars: Number.POSITIVE_INFINITY } : {});
            if (!json()) console.log(shown.text);
            if (!shown.matches) throw new CliError(`rejected: the arguments of call ${callId} do not match their digest; nothing was sent`);
            if (!shown.complete && decision === 'approve') {
              throw new CliError(
                `rejected: the arguments of call ${callId} are longer than shown, and a call is approved only from a whole view; ` +
                  'nothing was sent. See them whole with --all, or pass --args-digest of what you checked',
              );
            }
            digest = decisionDigest(pending);
          }
          // A signing client records its key's name as the approver; otherwise the login name stands in.
          const approver = options.approver ?? (client.signingKeyId ? undefined : process.env.USER);
          return client[decision](workflowId, callId, {
            reason: options.reason,
            approver,
            argsDigest: digest,
            ...(args !== undefined ? { args } : {}),
            ...(grant ? { grant } : {}),
          });
        });
        const edited =
          (receipt.editedDigest ? ` with edited arguments (argsDigest ${receipt.editedDigest})` : '') +
          (grant ? `, granting like calls for ${options.grantFor} (tollgate grants list)` : '');
        print(receipt, () => `${receipt.decision === 'approve' ? 'Approved' : 'Denied'} ${receipt.callId} of ${workflowId}${edited}.`);
      });
  }
}

/** `inbox --web`: serves the web inbox until Ctrl-C. */
async function serveWebInbox({ port, host, enroll = [] }: { port?: string; host?: string; enroll?: string[] }): Promise<void> {
  const config = loadConfig();
  if (port !== undefined) {
    const number = Number(port);
    if (!Number.isInteger(number) || number < 1 || number > 65535)
      throw new CliError(`--port must be a port number (1-65535), got "${port}"`);
    config.inbox.port = number;
  }
  if (host !== undefined) config.inbox.host = host;
  const client = await TollgateClient.connect(config);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startInboxServer } = require('../inbox/inbox-server') as typeof import('../inbox/inbox-server');
  const inbox = await startInboxServer({ config, client, enroll }).catch(async (error: unknown) => {
    await client.close();
    throw new CliError(`the web inbox could not start: ${(error as Error).message}`);
  });
  console.log(`The inbox is at ${inbox.url} (Ctrl-C stops it).`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await inbox.close();
  await client.close();
}
