/**
 * Which run of a message notebook each nonce belongs to, and what the agent kernel told of
 * it (`kernelcomm.ts` says what travels on the comm), apart from JupyterLab's models so
 * that it can be tested on its own.
 *
 * A run gets a fresh nonce when it is scheduled; the kernel tags what it tells of a run with
 * the nonce of the live state that run took. Runs of one cell end in the order they were
 * scheduled, so the run that ends is the oldest one of its cell still open: what was told
 * for another nonce, another cell, or a nonce this notebook never sent, is never its.
 */

/** What the kernel tells of one run, beside its execute reply. */
export interface IRunOutcome {
  [key: string]: unknown;
}

export class RunLedger<TCell extends object> {
  /** Record that a run of `cell` was scheduled with `nonce`. */
  scheduled(cell: TCell, nonce: string): void {
    const open = this._open.get(cell);
    if (open) {
      open.push(nonce);
    } else {
      this._open.set(cell, [nonce]);
    }
    this._sent.add(nonce);
  }

  /** Keep what the kernel told (a comm message's data): dropped unless it names, by its
   * nonce, a run of this notebook still open. */
  told(data: unknown): void {
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      return;
    }
    const { nonce, ...outcome } = data as { [key: string]: unknown };
    if (typeof nonce === 'string' && this._sent.has(nonce)) {
      this._told.set(nonce, outcome);
    }
  }

  /** The run of `cell` that ended (the oldest one open): what the kernel told of it, if
   * anything. */
  ended(cell: TCell): IRunOutcome | undefined {
    const nonce = this._open.get(cell)?.shift();
    if (nonce === undefined) {
      return undefined;
    }
    const outcome = this._told.get(nonce);
    this._told.delete(nonce);
    this._sent.delete(nonce);
    return outcome;
  }

  /** Forget every open run (the kernel restarted or changed: none of them will end). */
  clear(): void {
    this._open = new WeakMap();
    this._sent.clear();
    this._told.clear();
  }

  private _open = new WeakMap<TCell, string[]>();
  private readonly _sent = new Set<string>();
  private readonly _told = new Map<string, IRunOutcome>();
}
