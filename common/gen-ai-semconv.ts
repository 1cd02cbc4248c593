// The OpenTelemetry GenAI semantic conventions Tollgate's spans follow, under the names and with
// the values the pinned @opentelemetry/semantic-conventions (1.45.0, semantic conventions v1.41.0)
// exports from its incubating entry point. They are copied here, as that package advises for
// incubating conventions (they may change in a minor release, and the project's module resolution
// does not reach that entry point); test/unit/gen-ai-semconv.test.ts checks every one against
// the package. The workflows use them too, so this file imports nothing.

// Stable, but copied too: the package's main entry would bring every stable name into the workflow bundle.
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name';
export const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
export const ATTR_GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens';
export const ATTR_GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
export const ATTR_GEN_AI_RESPONSE_ID = 'gen_ai.response.id';
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons';
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
export const ATTR_GEN_AI_INPUT_MESSAGES = 'gen_ai.input.messages';
export const ATTR_GEN_AI_OUTPUT_MESSAGES = 'gen_ai.output.messages';
export const ATTR_GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id';
export const ATTR_GEN_AI_AGENT_NAME = 'gen_ai.agent.name';
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id';
export const ATTR_GEN_AI_TOOL_TYPE = 'gen_ai.tool.type';

export const GEN_AI_OPERATION_NAME_VALUE_CHAT = 'chat';
export const GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL = 'execute_tool';
export const GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT = 'invoke_agent';

export const GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC = 'anthropic';
export const GEN_AI_PROVIDER_NAME_VALUE_AWS_BEDROCK = 'aws.bedrock';
export const GEN_AI_PROVIDER_NAME_VALUE_AZURE_AI_OPENAI = 'azure.ai.openai';
export const GEN_AI_PROVIDER_NAME_VALUE_COHERE = 'cohere';
export const GEN_AI_PROVIDER_NAME_VALUE_DEEPSEEK = 'deepseek';
export const GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI = 'gcp.gemini';
export const GEN_AI_PROVIDER_NAME_VALUE_GCP_VERTEX_AI = 'gcp.vertex_ai';
export const GEN_AI_PROVIDER_NAME_VALUE_GROQ = 'groq';
export const GEN_AI_PROVIDER_NAME_VALUE_MISTRAL_AI = 'mistral_ai';
export const GEN_AI_PROVIDER_NAME_VALUE_OPENAI = 'openai';
export const GEN_AI_PROVIDER_NAME_VALUE_PERPLEXITY = 'perplexity';
export const GEN_AI_PROVIDER_NAME_VALUE_X_AI = 'x_ai';
