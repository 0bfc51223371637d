/**
 * Code a reply proposes (ATTP's `[proposed_code]`): the agent kernel tells it on the comm
 * of the run (`kernelcomm.ts`), before the execute reply,
 *
 *     {"nonce": ..., "proposed": {"after": CELL_ID, "auto_run": false,
 *                                 "cells": [{"code": "...", "language": "python"}]}}
 *
 * and this inserts each as a new `[code]` cell right under the message (metadata
 * `percent_agent: {type: "code"}` and `proposed: true`, so a save writes
 * `[code] proposed=true`). It never runs by itself: the user reads it and runs it, unless the
 * user's own config lists the folder under `auto_run` (the kernel says so: `"auto_run":
 * true`). Running it, or editing it, removes the `proposed` mark.
 */

import { ICellModel } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

import { addRunHook } from './kernelcomm';
import { runCellModels } from './run';

const PROPOSED = 'proposed';

interface IProposedCell {
  code: string;
  language?: string;
}

/** Insert the cells a run's reply proposes (`proposed`, as the kernel told it) under the
 * message they answer. */
export function insertProposals(panel: NotebookPanel, proposed: unknown): void {
  const model = panel.model;
  if (
    model === null ||
    typeof proposed !== 'object' ||
    proposed === null ||
    !Array.isArray((proposed as { [key: string]: unknown })['cells'])
  ) {
    return;
  }
  const entry = proposed as { [key: string]: unknown };
  let index = -1;
  for (let i = 0; i < model.cells.length; i++) {
    if (model.cells.get(i).id === entry['after']) {
      index = i;
    }
  }
  if (index < 0) {
    return;
  }
  const inserted: ICellModel[] = [];
  for (const cell of entry['cells'] as IProposedCell[]) {
    if (typeof cell?.code !== 'string') {
      continue;
    }
    const ns: { [key: string]: string } = { type: 'code' };
    const language =
      typeof cell.language === 'string' ? cell.language : 'python';
    if (language !== 'python') {
      ns['lang'] = language;
    }
    index += 1;
    model.sharedModel.insertCell(index, {
      cell_type: 'code',
      source: cell.code.replace(/\n$/, ''),
      metadata: { percent_agent: ns, [PROPOSED]: true }
    });
    inserted.push(model.cells.get(index));
  }
  if (entry['auto_run'] === true) {
    void runCellModels(panel, inserted);
  }
}

/** A proposed cell the user edits is theirs: the mark goes. */
function dropMarkOnEdit(cell: ICellModel, watched: WeakSet<ICellModel>): void {
  if (watched.has(cell) || cell.getMetadata(PROPOSED) === undefined) {
    return;
  }
  watched.add(cell);
  cell.sharedModel.changed.connect((_, change) => {
    if (change.sourceChange && cell.getMetadata(PROPOSED) !== undefined) {
      cell.deleteMetadata(PROPOSED);
    }
  });
}

let runsWatched = false;

/** Insert the proposals of every run of `panel`'s cells; drop the mark when a proposed
 * cell is run or edited. */
export function watchProposals(panel: NotebookPanel): void {
  const watched = new WeakSet<ICellModel>();
  const markAll = (): void => {
    for (const cell of panel.model?.cells ?? []) {
      dropMarkOnEdit(cell, watched);
    }
  };
  void panel.context.ready.then(() => {
    markAll();
    panel.model?.cells.changed.connect(markAll);
  });
  if (!runsWatched) {
    runsWatched = true;
    NotebookActions.executionScheduled.connect((_, { cell }) => {
      if (cell.model.getMetadata(PROPOSED) !== undefined) {
        cell.model.deleteMetadata(PROPOSED);
      }
    });
  }
  addRunHook(panel, {
    ended: (_, outcome) => {
      if (!panel.isDisposed && outcome['proposed'] !== undefined) {
        insertProposals(panel, outcome['proposed']);
      }
    }
  });
}
