/**
 * A cell's entry in the live state a message notebook sends with every run (`livecells.ts`):
 * what the kernel learns of a cell the file does not show yet.
 */

import { ILiveCell, liveCellEntry } from '../livecells';

function cell(
  id: string,
  type: string,
  source: string,
  metadata: { [key: string]: unknown } = {}
): ILiveCell {
  return {
    id,
    type,
    getMetadata: (key: string) => metadata[key],
    sharedModel: { getSource: () => source }
  };
}

describe('liveCellEntry', () => {
  it('sends a saved cell as its id, type and the keys that pick the agent and history', () => {
    const saved = cell('q2', 'code', 'Hello.', {
      agent: 'critic',
      history: 'summary',
      summary: 'Asked about trains.',
      summary_hash: 'abc',
      tags: ['x'],
      percent_agent: { type: 'message' }
    });
    expect(liveCellEntry(saved, false)).toEqual({
      id: 'q2',
      cell_type: 'code',
      agent: 'critic',
      history: 'summary',
      summary: 'Asked about trains.',
      summary_hash: 'abc'
    });
  });

  it('adds the source of a cell that is not as saved', () => {
    const edited = cell('a1', 'code', 'models: [m]', {
      definition: 'agent',
      name: 'writer'
    });
    expect(liveCellEntry(edited, true)).toEqual({
      id: 'a1',
      cell_type: 'code',
      definition: 'agent',
      name: 'writer',
      source: 'models: [m]',
      unsaved: true
    });
  });

  it('says what a [code] cell added here is, with its language', () => {
    const proposed = cell('p1', 'code', 'plot(df)', {
      percent_agent: { type: 'code', lang: 'r' }
    });
    expect(liveCellEntry(proposed, true)).toMatchObject({
      kind: 'code',
      lang: 'r',
      source: 'plot(df)'
    });
    // once saved, the file says it
    expect(liveCellEntry(proposed, false)).not.toHaveProperty('kind');
  });

  it('sends outputs only when given', () => {
    const ran = cell('q1', 'code', 'Hi.');
    const outputs = [{ output_type: 'stream', name: 'stdout', text: 'Hello' }];
    expect(liveCellEntry(ran, false, outputs)).toEqual({
      id: 'q1',
      cell_type: 'code',
      outputs
    });
    expect(liveCellEntry(ran, false)).not.toHaveProperty('outputs');
  });
});
