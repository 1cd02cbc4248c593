/** Whether `value` carries the marker registered under `key`, whichever copy of the package set it. */
function carriesMarker(value: unknown, key: string): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[Symbol.for(key)] === true;
}

/**
 * The base of every error Tollgate throws: each instance carries one `Symbol.for` marker per class
 * along its chain, so `isInstance` recognises it when another copy of the package made it (two
 * versions in one tree, a bundled plugin), where `instanceof` compares class identities and fails.
 */
export class TollgateError extends Error {
  /** The marker of this class's instances, `tollgate.error.<Name>`; every subclass declares its own. */
  static readonly marker: string = 'tollgate.error';

  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    // Marked by every class of the chain, so that an ancestor's isInstance holds as instanceof would;
    // not enumerable, so logs, snapshots and equality see the error as before.
    for (let type: unknown = new.target; typeof type === 'function' && type !== Error; type = Object.getPrototypeOf(type)) {
      if (Object.hasOwn(type, 'marker')) {
        Object.defineProperty(this, Symbol.for((type as typeof TollgateError).marker), { value: true });
      }
    }
  }

  /** Whether `value` is an instance of the class this is called on, made by this copy of the package or another. */
  static isInstance<Instance>(this: { readonly marker: string; readonly prototype: Instance }, value: unknown): value is Instance {
    return carriesMarker(value, this.marker);
  }
}
