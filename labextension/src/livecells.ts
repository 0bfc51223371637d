/**
 * One cell's entry in a message notebook's live state (`livestate.ts` says what the state is
 * for and its shape), apart from JupyterLab's models, so that it can be tested on its own.
 */

import type { JSONObject, JSONValue } from '@lumino/coreutils';

export const LIVE_STATE_VERSION = 1;

/** The flat metadata keys that decide who answers and what the history holds. */
const KEYS = [
  'agent',
  'history',
  'summary',
  'summary_hash',
  'definition',
  'name'
];

/** What the entry reads of a cell: a JupyterLab cell model has all of it. */
export interface ILiveCell {
  readonly id: string;
  readonly type: string;
  getMetadata(key: string): unknown;
  readonly sharedModel: { getSource(): string };
}

/**
 * The entry of `cell`: its id, type and flat metadata keys; its source (with `unsaved`) when
 * it is not as saved; its `outputs` when given (the kernel running now did not make them).
 */
export function liveCellEntry(
  cell: ILiveCell,
  unsaved: boolean,
  outputs?: JSONValue
): JSONObject {
  const entry: JSONObject = { id: cell.id, cell_type: cell.type };
  for (const key of KEYS) {
    const value = cell.getMetadata(key);
    if (value !== undefined) {
      entry[key] = value as JSONValue;
    }
  }
  if (unsaved) {
    entry['source'] = cell.sharedModel.getSource();
    entry['unsaved'] = true;
    // a cell added here (a proposed [code] cell) says what it is: the file does not yet
    const ns = cell.getMetadata('percent_agent') as
      { [key: string]: unknown } | undefined;
    if (ns && ns['type'] === 'code') {
      entry['kind'] = 'code';
      if (typeof ns['lang'] === 'string') {
        entry['lang'] = ns['lang'];
      }
    }
  }
  if (outputs !== undefined) {
    entry['outputs'] = outputs;
  }
  return entry;
}
