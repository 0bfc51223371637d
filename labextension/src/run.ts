/**
 * Running the cells meant: a proposal the user's config runs at once, a cell run again
 * after the user trusted its folder or set up a model. Each is named by its cell model, not
 * by an index, and looked up only when its turn comes: cells added, deleted or moved while
 * an earlier one runs (by the user, a collaborator, another reply) change nothing. It runs
 * through `NotebookActions.runCells` on that one cell, so the active cell and the user's
 * selection stay as they are.
 */

import { ICellModel } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

/**
 * Run the cells of `models` in `panel`, one after the other, each where it is when its turn
 * comes; a cell deleted meanwhile is skipped. Resolves true when every cell that was still
 * there ran without error.
 */
export async function runCellModels(
  panel: NotebookPanel,
  models: readonly ICellModel[]
): Promise<boolean> {
  let ok = true;
  for (const model of models) {
    if (panel.isDisposed) {
      return false;
    }
    const cell = panel.content.widgets.find(widget => widget.model === model);
    if (cell === undefined) {
      continue; // deleted since
    }
    ok =
      (await NotebookActions.runCells(
        panel.content,
        [cell],
        panel.sessionContext
      )) && ok;
  }
  return ok;
}
