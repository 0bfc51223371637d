/**
 * The notebook as the user sees it, sent before every run of a cell of a message notebook
 * (on the kernel's comm, `kernelcomm.ts`, tied to that run), so that the agent kernel can
 * build the history from it rather than from the file on disk.
 *
 * The kernel reads the saved file and lays over it the running cell's live source (and what
 * it ran itself): an agent picked in a cell's bar, a message excluded, text edited, none of
 * it saved yet, does not reach it. JupyterLab sends the running cell's id and metadata in
 * the execute request (`cellId`, `agent`, `history`, ...); the rest goes as the state:
 *
 *     {
 *       "version": 1,
 *       "path": "notes/trip.msg.md", "root": "~/work",   // where the notebook is now
 *       "cells": [                          // every cell, in notebook order
 *         {"id": "front-matter", "cell_type": "raw", "source": "---\n...\n---",
 *          "unsaved": true},                 // source only when not as saved
 *         {"id": "q1", "cell_type": "code", "agent": "helper"},
 *         {"id": "q2", "cell_type": "code", "history": "exclude"},
 *         {"id": "q3", "cell_type": "code", "history": "summary", "summary": "...",
 *          "summary_hash": "..."},
 *         {"id": "a1", "cell_type": "code", "definition": "agent", "name": "critic",
 *          "source": "models: [gpt-4o-mini]", "unsaved": true},
 *         {"id": "p1", "cell_type": "code", "kind": "code", "lang": "r",
 *          "source": "plot(df)", "unsaved": true}   // a [code] cell added here
 *       ]
 *     }
 *
 * A cell carries its `source` (and `unsaved: true`) only when it is new or was edited since
 * the notebook was opened or last saved. Its outputs go only when the kernel running now
 * did not make them: a cell that ran since the last save, before the kernel restarted (or
 * changed), sends its `outputs` (nbformat JSON) until it runs again or the notebook is saved;
 * otherwise the kernel keeps the ones it produced. The kernel lays it over the saved file
 * (`kernel/_notebook.py: lay_live_state`).
 */

import { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import { PageConfig } from '@jupyterlab/coreutils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { JSONObject, JSONValue } from '@lumino/coreutils';

import { addRunHook } from './kernelcomm';
import { liveCellEntry, LIVE_STATE_VERSION } from './livecells';

/** Which cells are not as saved: edited or new since the last load or save; and which
 * cells' unsaved outputs the kernel running now did not make. */
class Edits {
  private readonly _saved = new Map<string, string>();
  /** Cells run since the last load or save: their outputs are not in the file. */
  private readonly _ran = new Set<string>();
  /** Of those, the ones run before the kernel restarted: the kernel now does not know them. */
  private readonly _unknown = new Set<string>();

  constructor(private readonly _panel: NotebookPanel) {
    void _panel.context.ready.then(() => this.snapshot());
    _panel.context.saveState.connect((_, state) => {
      if (state === 'completed') {
        this.snapshot();
      }
    });
    _panel.sessionContext.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'autorestarting') {
        this.restarted();
      }
    });
    _panel.sessionContext.kernelChanged.connect(() => this.restarted());
  }

  /** Remember every cell's source as it is now: what the file holds. */
  snapshot(): void {
    this._saved.clear();
    this._ran.clear();
    this._unknown.clear();
    for (const cell of this._panel.model?.cells ?? []) {
      this._saved.set(cell.id, cell.sharedModel.getSource());
    }
  }

  unsaved(cell: ICellModel): boolean {
    return this._saved.get(cell.id) !== cell.sharedModel.getSource();
  }

  /** The cell `id` runs in the kernel running now: its outputs will be that kernel's. */
  ran(id: string): void {
    this._ran.add(id);
    this._unknown.delete(id);
  }

  /** A new kernel: the outputs of every cell run since the last save are not its own. */
  restarted(): void {
    for (const id of this._ran) {
      this._unknown.add(id);
    }
  }

  /** Whether the kernel running now did not make the (unsaved) outputs of `cell`. */
  unknownOutputs(cell: ICellModel): boolean {
    return this._unknown.has(cell.id);
  }
}

const edits = new WeakMap<NotebookPanel, Edits>();

/** The live state of `panel` (see the module's docstring for its shape). */
export function liveState(panel: NotebookPanel): JSONObject {
  const tracked = edits.get(panel);
  const cells: JSONObject[] = [];
  for (const cell of panel.model?.cells ?? []) {
    const outputs =
      tracked?.unknownOutputs(cell) && cell.type === 'code'
        ? ((cell as ICodeCellModel).outputs.toJSON() as unknown as JSONValue)
        : undefined;
    cells.push(
      liveCellEntry(
        cell,
        tracked === undefined || tracked.unsaved(cell),
        outputs
      )
    );
  }
  // Where the notebook is now: a rename or move of an open notebook changes its session's
  // path, never the kernel's JPY_SESSION_NAME (the path it started with).
  const root = PageConfig.getOption('serverRoot');
  return { version: LIVE_STATE_VERSION, path: panel.context.path, root, cells };
}

/** Send `liveState(panel)` before every run of a cell of `panel` (`kernelcomm.ts`). */
export function sendLiveState(panel: NotebookPanel): void {
  if (edits.has(panel)) {
    return;
  }
  const tracked = new Edits(panel);
  edits.set(panel, tracked);
  addRunHook(panel, {
    state: cell => {
      const state = liveState(panel);
      tracked.ran(cell.id);
      return state;
    }
  });
}
