/**
 * Message notebooks: which open notebooks are conversations with an agent, and what they
 * get for it.
 *
 * A message notebook is one whose path ends in `.md` (a message file, or a Markdown file
 * opened as a notebook), or whose kernel (running, or named in its metadata) is the agent
 * kernel. Everything it shows was written by a model or came with a shared file, so:
 *
 * - its cells are kept untrusted: JupyterLab trusts a cell when the user runs it (and on
 *   "Trust Notebook"), which would render the reply streaming into it with trusted HTML;
 *   here the flag is put back at once, before any output arrives;
 * - its own renderer registry (a per-notebook clone) renders every Markdown and HTML
 *   output as model output (`messageNotebookFactories`).
 */

import { ICellModel } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';

import { messageNotebookFactories } from './renderer';

export const KERNEL_NAME = 'percent-agent';

/** Whether `panel` holds a conversation with an agent (see the module's docstring). */
export function isMessageNotebook(panel: NotebookPanel): boolean {
  if (panel.isDisposed) {
    return false;
  }
  if (/\.md$|\.msg\.(py|r|jl|sh)$/i.test(panel.context.path)) {
    return true;
  }
  if (panel.sessionContext.session?.kernel?.name === KERNEL_NAME) {
    return true;
  }
  const spec = panel.model?.getMetadata('kernelspec') as { name?: unknown } | undefined;
  return spec?.name === KERNEL_NAME;
}

const TRUSTED = 'trusted';

/** Put a cell's trust flag back to untrusted, and keep it there. */
function keepUntrusted(cell: ICellModel, watched: WeakSet<ICellModel>): void {
  untrust(cell);
  if (watched.has(cell)) {
    return;
  }
  watched.add(cell);
  cell.stateChanged.connect((model, change) => {
    if (change.name === 'trusted' && change.newValue) {
      untrust(model);
    }
  });
}

/**
 * Put every cell of a message notebook back to untrusted: after "Trust Notebook", which
 * trusts Markdown and raw cells without a signal (code cells are watched).
 */
export function untrustNotebook(panel: NotebookPanel): void {
  if (panel.model === null || !isMessageNotebook(panel)) {
    return;
  }
  for (const cell of panel.model.cells) {
    untrust(cell);
  }
}

function untrust(cell: ICellModel): void {
  if (cell.trusted) {
    cell.trusted = false;
  }
  // JupyterLab writes `trusted: true` into the metadata of a cell it trusts.
  if (cell.getMetadata(TRUSTED) !== undefined) {
    cell.deleteMetadata(TRUSTED);
  }
}

const guarded = new WeakSet<NotebookPanel>();

/**
 * Watch `panel`: once it is (or becomes) a message notebook, its cells stay untrusted and
 * its renderers treat every output as model output. Returns at once; safe to call twice.
 */
export function guardNotebook(panel: NotebookPanel, onMessageNotebook?: () => void): void {
  if (guarded.has(panel)) {
    return;
  }
  guarded.add(panel);
  const watched = new WeakSet<ICellModel>();
  let active = false;

  const untrustAll = (): void => {
    const model = panel.model;
    if (model === null) {
      return;
    }
    for (const cell of model.cells) {
      keepUntrusted(cell, watched);
    }
  };

  const check = (): void => {
    if (active || !isMessageNotebook(panel)) {
      return;
    }
    active = true;
    const rendermime = panel.content.rendermime;
    for (const factory of messageNotebookFactories) {
      rendermime.addFactory(factory, factory.defaultRank);
    }
    untrustAll();
    panel.model?.cells.changed.connect(untrustAll);
    onMessageNotebook?.();
  };

  check();
  void panel.context.ready.then(check);
  panel.context.pathChanged.connect(check);
  panel.sessionContext.kernelChanged.connect(check);
  panel.sessionContext.ready.then(check).catch(() => undefined);
}
