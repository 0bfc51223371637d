/**
 * The comm between a message notebook and the agent kernel (the kernel's side:
 * `jupyter_percent_agent/kernel/_comm.py`), through JupyterLab's public APIs only.
 *
 * JupyterLab has no public hook to add to a cell's execute request, nor to read its reply.
 * So when `NotebookActions.executionScheduled` says a cell of the notebook is about to run
 * (JupyterLab emits it right before it sends the execute request), this sends the
 * notebook's live state (`livestate.ts`) on the comm, on the same connection, so it reaches
 * the kernel first:
 *
 *     {"cellId": "q4", "nonce": "<fresh for this run>", "state": {...}}
 *
 * The kernel lays it over that run only: the execute request of the same client for the
 * same cell takes it; it never lands on another run. Before the execute reply, the kernel
 * tells on the comm what JupyterLab's reply handling does not show, tagged with the run's
 * nonce: the code the reply proposes (`proposals.ts`), a refusal that trusting a folder
 * would lift (`trust.ts`). When `NotebookActions.executed` says the run ended, its parts
 * get what was told of it (`RunLedger`).
 */

import { ICellModel } from '@jupyterlab/cells';
import { Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { JSONObject, UUID } from '@lumino/coreutils';

import { KERNEL_NAME } from './notebook';
import { IRunOutcome, RunLedger } from './runledger';

/** The comm target the agent kernel registers (`jupyter_percent_agent.kernel.COMM_TARGET`). */
export const COMM_TARGET = 'percent_agent';

/** What a part of a message notebook does with its runs. */
export interface IRunHook {
  /** The live state to send before `cell` runs (one hook of a notebook gives it). */
  state?(cell: ICellModel): JSONObject;
  /** The run of `cell` ended; `outcome` is what the kernel told of it. */
  ended?(cell: ICellModel, outcome: IRunOutcome, success: boolean): void;
}

/** One message notebook's comm with its kernel, and its runs. */
class NotebookComm {
  constructor(private readonly _panel: NotebookPanel) {
    const forget = (): void => this._ledger.clear();
    _panel.sessionContext.kernelChanged.connect(forget);
    _panel.sessionContext.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'autorestarting') {
        forget();
      }
    });
  }

  readonly hooks: IRunHook[] = [];

  /** A cell of the notebook is about to run. */
  scheduled(cell: ICellModel): void {
    const kernel = this._panel.sessionContext.session?.kernel;
    // JupyterLab sends no request for an empty cell; only the agent kernel has the comm
    if (
      !kernel ||
      kernel.name !== KERNEL_NAME ||
      !cell.sharedModel.getSource().trim()
    ) {
      return;
    }
    const state = this.hooks.find(hook => hook.state)?.state?.(cell);
    if (state === undefined) {
      return;
    }
    const nonce = UUID.uuid4();
    this._commOf(kernel).send({ cellId: cell.id, nonce, state });
    this._ledger.scheduled(cell, nonce);
  }

  /** A cell of the notebook ran. */
  ended(cell: ICellModel, success: boolean): void {
    const outcome = this._ledger.ended(cell) ?? {};
    for (const hook of this.hooks) {
      hook.ended?.(cell, outcome, success);
    }
  }

  /** The comm with `kernel`: opened once, again after a restart (which closes it). */
  private _commOf(kernel: Kernel.IKernelConnection): Kernel.IComm {
    if (this._comm && !this._comm.isDisposed && this._kernel === kernel) {
      return this._comm;
    }
    const comm = kernel.createComm(COMM_TARGET);
    comm.onMsg = msg => this._ledger.told(msg.content.data);
    comm.open();
    this._comm = comm;
    this._kernel = kernel;
    return comm;
  }

  private readonly _ledger = new RunLedger<ICellModel>();
  private _comm: Kernel.IComm | null = null;
  private _kernel: Kernel.IKernelConnection | null = null;
}

const comms = new WeakMap<Notebook, NotebookComm>();
let listening = false;

/** Run `hook` on every run of a cell of message notebook `panel`. */
export function addRunHook(panel: NotebookPanel, hook: IRunHook): void {
  let comm = comms.get(panel.content);
  if (comm === undefined) {
    comm = new NotebookComm(panel);
    comms.set(panel.content, comm);
  }
  comm.hooks.push(hook);
  if (listening) {
    return;
  }
  listening = true;
  NotebookActions.executionScheduled.connect((_, { notebook, cell }) => {
    comms.get(notebook)?.scheduled(cell.model);
  });
  NotebookActions.executed.connect((_, { notebook, cell, success }) => {
    comms.get(notebook)?.ended(cell.model, success);
  });
}
