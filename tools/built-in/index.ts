import type { TollgateConfig } from '../../config/config-schema';
import { openCorpus } from '../corpus';
import type { ToolDefinition } from '../define-tool';
import { getDocumentTool } from './get-document';
import { saveDraftTool } from './save-draft';
import { searchLocalSourcesTool } from './search-local-sources';
import { sendMessageTool } from './send-message';
import { shellTool } from './shell';

/** The tools every worker serves unless told otherwise. */
export function builtInTools(config: TollgateConfig): ToolDefinition[] {
  const corpus = openCorpus(config.corpus);
  const { workspace } = config;
  return [
    searchLocalSourcesTool(corpus),
    getDocumentTool(corpus),
    saveDraftTool({ workspace }),
    sendMessageTool({ workspace }),
    shellTool({ workspace }),
  ];
}
