/**
 * What each message notebook gets, as a widget extension of JupyterLab's Notebook factory
 * (as JupyterLab's own cell toolbar is): made with the panel, before its file is read, and
 * disposed with it.
 *
 * - its renderer registry guarded from the first output it renders, its cells kept
 *   untrusted (`notebook.ts`);
 * - once it is known to be a message notebook (its path, its kernel, its kernelspec): the
 *   bar over each message (`cellbar.ts`), the live state in each request (`livestate.ts`),
 *   the code a reply proposes (`proposals.ts`), "Trust this folder?" (`trust.ts`),
 *   `[code]` cells highlighted as their language (`codecells.ts`), and an image pasted
 *   into a message saved beside the conversation and linked (`pasteimages.ts`).
 *
 * "Trust Notebook" trusts every cell of every notebook: the plugin puts a message
 * notebook's back; it offers "Set up a model" under a cell that failed for a missing key, and
 * asks an external agent's permission requests in a dialog (`permission.ts`).
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import {
  INotebookModel,
  INotebookTracker,
  NotebookPanel
} from '@jupyterlab/notebook';
import { Contents } from '@jupyterlab/services';
import { ITranslator } from '@jupyterlab/translation';
import { Token } from '@lumino/coreutils';
import { DisposableSet, IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { decorateCells } from './cellbar';
import { highlightCodeCells } from './codecells';
import { NOTEBOOK_FACTORY } from './filetypes';
import { sendLiveState } from './livestate';
import { guardNotebook, guardRenderers, untrustNotebook } from './notebook';
import { watchPastedImages } from './pasteimages';
import { askPermissionsInDialogs } from './permission';
import { watchProposals } from './proposals';
import { watchMissingKeys } from './setup';
import { setTranslator } from './translation';
import { watchTrustRefusals } from './trust';

/** The open notebooks known to be message notebooks: for plugins that show something
 * for a conversation only (the status bar's running total). */
export interface IMessageNotebooks {
  /** A notebook found to be a message notebook: when it opens, or later (its kernel or
   * kernelspec says so once known). */
  readonly found: ISignal<IMessageNotebooks, NotebookPanel>;
}

export const IMessageNotebooks = new Token<IMessageNotebooks>(
  'jupyter-percent-agent:IMessageNotebooks',
  'The notebooks that are conversations with an agent, as they are found.'
);

/** The per-notebook parts of a message notebook. */
export class MessageNotebookExtension
  implements
    DocumentRegistry.IWidgetExtension<NotebookPanel, INotebookModel>,
    IMessageNotebooks
{
  /** `contents`: where an image pasted into a message is saved. */
  constructor(private readonly _contents: Contents.IManager) {}

  get found(): ISignal<this, NotebookPanel> {
    return this._found;
  }

  createNew(panel: NotebookPanel): IDisposable {
    const parts = new DisposableSet();
    // Before the file is read: a message notebook's first outputs render as model output.
    guardRenderers(panel);
    guardNotebook(panel, () => {
      if (parts.isDisposed) {
        return;
      }
      parts.add(decorateCells(panel));
      sendLiveState(panel);
      watchProposals(panel);
      watchTrustRefusals(panel);
      askPermissionsInDialogs(panel);
      highlightCodeCells(panel);
      parts.add(watchPastedImages(panel, this._contents));
      this._found.emit(panel);
    });
    return parts;
  }

  private readonly _found = new Signal<this, NotebookPanel>(this);
}

export const messageNotebooksPlugin: JupyterFrontEndPlugin<IMessageNotebooks> =
  {
    id: 'jupyter-percent-agent:message-notebooks',
    description:
      'Message notebooks: untrusted model output, the bar over each message, the live state',
    autoStart: true,
    requires: [INotebookTracker],
    optional: [ITranslator],
    provides: IMessageNotebooks,
    activate: (
      app: JupyterFrontEnd,
      tracker: INotebookTracker,
      translator: ITranslator | null
    ): IMessageNotebooks => {
      setTranslator(translator);
      const extension = new MessageNotebookExtension(
        app.serviceManager.contents
      );
      app.docRegistry.addWidgetExtension(NOTEBOOK_FACTORY, extension);
      watchMissingKeys();
      app.commands.commandExecuted.connect((_, executed) => {
        if (executed.id === 'notebook:trust') {
          void executed.result.then(() => {
            tracker.forEach(untrustNotebook);
          });
        }
      });
      return extension;
    }
  };
