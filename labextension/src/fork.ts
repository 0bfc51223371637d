/**
 * "Fork from here": a new message file with the conversation up to and including a cell
 * (outputs kept, `forked_from` in its front matter), opened beside the original. The
 * server's `/percent-agent/fork` makes it, as `tce fork` does: the notebook is saved first,
 * so the fork holds what the user sees; the original is never written by the fork.
 */

import { showErrorMessage } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';

import { requestServer } from './server';
import { trans } from './translation';

export const FORK_COMMAND = 'percent-agent:fork-from-here';
const ROUTE = 'percent-agent/fork';

/** What the command needs of JupyterLab: a way to open the new file. */
export type OpenFile = (path: string) => Promise<unknown>;

/**
 * Fork `panel`'s conversation up to its active cell and open the fork; a refusal is shown
 * in one line. Returns the fork's path, or null when nothing was made.
 */
export async function forkFromHere(
  panel: NotebookPanel,
  open: OpenFile
): Promise<string | null> {
  const t = trans();
  const cell = panel.content.activeCell;
  if (cell === null) {
    return null;
  }
  try {
    if (panel.context.model.dirty) {
      await panel.context.save();
    }
    const made = await requestServer<{ path: string }>(ROUTE, {
      method: 'POST',
      body: JSON.stringify({ path: panel.context.path, cell: cell.model.id })
    });
    await open(made.path);
    return made.path;
  } catch (reason) {
    void showErrorMessage(
      t.__('Fork from here'),
      reason instanceof Error ? reason.message : String(reason)
    );
    return null;
  }
}
