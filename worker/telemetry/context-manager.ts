import { AsyncLocalStorage } from 'node:async_hooks';
import { context, propagation, ROOT_CONTEXT, type Context, type ContextManager } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/** OpenTelemetry's active context on Node's AsyncLocalStorage, so a span made in an activity is a child of Temporal's activity span. */
class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(given: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A) {
    return this.storage.run(given, () => fn.call(thisArg, ...args));
  }

  bind<T>(given: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    return ((...args: unknown[]) => this.with(given, () => fn(...args))) as unknown as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}

let installed = false;

/**
 * Installs the process's OpenTelemetry context manager and the W3C trace-context propagator once:
 * Temporal's activity interceptor reads the workflow's span from the activity's headers through
 * the global propagator (a process keeps the first of each that was set).
 */
export function installContextManager(): void {
  if (installed) return;
  context.setGlobalContextManager(new AsyncLocalContextManager());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  installed = true;
}
