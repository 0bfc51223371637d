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
 *   output as model output, and tool calls and results as their blocks
 *   (`messageNotebookFactories`: only there, never in the application's registry, so
 *   other notebooks keep JupyterLab's renderers), and sanitizes with the model
 *   sanitizer, from the first output it renders: `guardRenderers` runs when the panel is
 *   made, before its file is read, and asks at each render whether the notebook is a
 *   message notebook (its kernelspec, read with its cells, is known when they render).
 */

import { ICellModel } from '@jupyterlab/cells';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { isMessagePath } from './filetypes';
import { messageNotebookFactories } from './renderer';
import { modelSanitizer } from './untrusted';

export const KERNEL_NAME = 'percent-agent';

/** Whether `panel` holds a conversation with an agent (see the module's docstring). */
export function isMessageNotebook(panel: NotebookPanel): boolean {
  return !panel.isDisposed && isMessageDocument(panel.context);
}

/** Whether the notebook document `context` is a conversation with an agent. */
function isMessageDocument(
  context: DocumentRegistry.IContext<INotebookModel>
): boolean {
  if (context.isDisposed) {
    return false;
  }
  if (isMessagePath(context.path)) {
    return true;
  }
  if (context.sessionContext.session?.kernel?.name === KERNEL_NAME) {
    return true;
  }
  const spec = context.model?.getMetadata('kernelspec') as
    { name?: unknown } | undefined;
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

/**
 * Make the renderers of `panel`'s registry model output renderers whenever its document is a
 * message notebook when an output renders, and its sanitizer the model sanitizer then (what
 * JupyterLab itself sanitizes with that registry: the HTML it reads a cell's output headings
 * from, in a live element). Call it when the panel is made (the notebook widget factory's
 * `widgetCreated`), before any output renders; a second view shares the registry.
 */
export function guardRenderers(panel: NotebookPanel): void {
  const rendermime = panel.content.rendermime;
  if (guardedRegistries.has(rendermime)) {
    return;
  }
  guardedRegistries.add(rendermime);
  const context = panel.context;
  const isMessage = (): boolean => isMessageDocument(context);
  for (const factory of messageNotebookFactories) {
    const other = rendermime.getFactory(factory.mimeTypes[0]);
    rendermime.addFactory(
      {
        safe: true,
        mimeTypes: factory.mimeTypes,
        defaultRank: factory.defaultRank,
        createRenderer: options =>
          (isMessage() || !other ? factory : other).createRenderer(options)
      },
      factory.defaultRank
    );
  }
  const inner = rendermime.sanitizer;
  const model = modelSanitizer(inner);
  const gate: IRenderMime.ISanitizer = {
    sanitize: (dirty, options) =>
      isMessage() ? model.sanitize(dirty) : inner.sanitize(dirty, options),
    getAutolink: () => (isMessage() ? model : inner).getAutolink?.() ?? true,
    get allowNamedProperties() {
      return (isMessage() ? model : inner).allowNamedProperties;
    },
    get allowCommandLinker() {
      return (isMessage() ? model : inner).allowCommandLinker;
    }
  };
  // JupyterLab's registries keep their sanitizer in a plain field.
  (rendermime as { sanitizer: IRenderMime.ISanitizer }).sanitizer = gate;
}

const guardedRegistries = new WeakSet<IRenderMimeRegistry>();
const guarded = new WeakSet<NotebookPanel>();

/**
 * Watch `panel`: once it is (or becomes) a message notebook, its cells stay untrusted and
 * its renderers treat every output as model output. Returns at once; safe to call twice.
 */
export function guardNotebook(
  panel: NotebookPanel,
  onMessageNotebook?: () => void
): void {
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
    guardRenderers(panel); // made before this extension saw it: from now on
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
