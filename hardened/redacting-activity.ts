import type { Redactor } from './redact';
import { redactFailure } from './redact-failure';

/**
 * An activity whose every failure is redacted as it leaves ({@link redactFailure}): what a
 * handler, a store driver or a status check threw reaches the history and the worker's log
 * without the worker's secrets, whichever path of the activity raised it. Its result is the
 * activity's own (each activity redacts what it returns where it builds it).
 */
export function redactingActivity<Arguments extends unknown[], Result>(
  activity: (...args: Arguments) => Promise<Result>,
  redactor: Redactor,
): (...args: Arguments) => Promise<Result> {
  return async (...args: Arguments) => {
    try {
      return await activity(...args);
    } catch (error) {
      throw redactFailure(error, redactor);
    }
  };
}
