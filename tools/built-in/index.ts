import path from 'node:path';
import type { TollgateConfig } from '../../config/config-schema';
import { openCorpus } from '../search/corpus';
import type { ToolDefinition } from '../define-tool';
import { getDocumentTool } from './get-document';
import { saveDraftTool } from './save-draft';
import { searchLocalSourcesTool } from './search-local-sources';
import { sendMessageTool } from './send-message';
import { shellTool } from './shell';

/** The tools every worker serves unless told otherwise. */
export function builtInTools(config: TollgateConfig): ToolDefinition[] {
  // The search index lives in the state folder, beside the embedded intent store.
  const corpus = openCorpus(config.corpus, { stateFolder: path.dirname(config.store.sqliteFile) });
  const { workspace } = config;
  return [
    searchLocalSourcesTool(corpus),
    getDocumentTool(corpus),
    saveDraftTool({ workspace }),
    sendMessageTool({ workspace }),
    shellTool({ workspace }),
  ];
}
