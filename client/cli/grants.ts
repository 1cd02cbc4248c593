// The grants commands: the standing grants people gave with their approvals, listed and revoked.
import type { Command } from 'commander';
import type { Grant } from '../../common/contract/decisions';
import { loadConfig } from '../../config/load-config';
import { formatTable } from '../format-table';
import { forTerminal } from '../terminal-text';
import { CliError, print } from './context';

/** The policy store, with its database drivers, is loaded by the grants commands only, not by every command. */
function policies(): typeof import('../../policies/policy-store') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../../policies/policy-store');
}

/** What a grant approves, in one cell: its condition's JSON, cut when long. */
function conditionCell(grant: Grant): string {
  if (grant.when === undefined) return 'any arguments';
  const json = JSON.stringify(grant.when);
  return json.length > 60 ? `${json.slice(0, 59)}…` : json;
}

function grantTable(grants: Grant[], at: number): string {
  const rows = grants.map((grant) =>
    [
      grant.id,
      grant.tool,
      `${grant.scope} ${grant.scopeKey.slice(grant.scope.length + 1)}`,
      conditionCell(grant),
      `${grant.uses}${grant.maxCalls !== undefined ? `/${grant.maxCalls}` : ''}`,
      grant.grantedBy,
      grant.expiresAt,
      policies().grantEnded(grant, at) === undefined
        ? 'active'
        : grant.revokedAt
          ? 'revoked'
          : Date.parse(grant.expiresAt) <= at
            ? 'expired'
            : 'used up',
    ].map(forTerminal),
  );
  return formatTable(['ID', 'TOOL', 'SCOPE', 'WHEN', 'USES', 'GRANTED BY', 'EXPIRES', 'STATE'], rows);
}

/** `grants list` and `grants revoke <id>`. */
export function registerGrantCommands(program: Command): void {
  const grants = program.command('grants').description('standing grants people gave with their approvals (docs/approvals.md)');
  grants
    .command('list')
    .description('the grants that still approve calls: tool, scope, condition, uses, who granted, when they expire')
    .option('--all', 'also those revoked, expired or used up')
    .action(async (options: { all?: boolean }) => {
      const store = policies().openPolicyStore(loadConfig());
      try {
        const at = Date.now();
        const found = await store.listGrants({ at, all: options.all });
        print(found, () => (found.length === 0 ? 'No grants.' : grantTable(found, at)));
      } finally {
        await store.close();
      }
    });
  grants
    .command('revoke')
    .description('revoke a grant: it approves nothing more, also in turns already running')
    .argument('<id>', 'the grant (grants list)')
    .option('--by <name>', 'who revokes, for the record (default: the login name)')
    .action(async (id: string, options: { by?: string }) => {
      const store = policies().openPolicyStore(loadConfig());
      try {
        const revoked = await store.revokeGrant(id, options.by ?? process.env.USER ?? 'a person', Date.now());
        if (!revoked) throw new CliError(`no grant ${id}; see tollgate grants list --all`);
        print(revoked, () => `Revoked ${revoked.id} (${revoked.tool}); it approved ${revoked.uses} call${revoked.uses === 1 ? '' : 's'}.`);
      } finally {
        await store.close();
      }
    });
}
