import { MockActivityEnvironment } from '@temporalio/testing';
import type { Info } from '@temporalio/activity';
import type { BoundaryResult, RunToolInput } from '../../common/activity-types';
import type { ToolResult } from '../../common/contract/tools';

/** One `runTool` result as tests read it: what the model sees, with the boundary's counts beside it. */
export type FlatBoundaryResult = ToolResult & Omit<BoundaryResult, 'result'>;

/** Runs the `runTool` activity once in a mock activity context (attempt 1 unless `info` says otherwise). */
export async function runToolOnce(
  runTool: (input: RunToolInput) => Promise<BoundaryResult>,
  input: RunToolInput,
  info?: Partial<Info>,
): Promise<FlatBoundaryResult> {
  const { result, ...counts }: BoundaryResult = await new MockActivityEnvironment(info).run(runTool, input);
  return { ...result, ...counts };
}
